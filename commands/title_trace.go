package commands

import (
	"context"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/traces"
)

// RecordTitle appends trace.titled when the revision is current and still
// has its derived title; otherwise it is a no-op (a newer import, an
// explicit title, or a duplicate job won).
type RecordTitle struct {
	WorkerID string
	TraceID  string
	Revision int
	Title    string
	Model    string
	Usage    []events.LLMUsage
}

// RecordTitleHandler runs RecordTitle.
type RecordTitleHandler struct{ *Streams }

func (c RecordTitleHandler) Handle(ctx context.Context, cmd RecordTitle) (Result, error) {
	// A model's answer is outside text too.
	if err := domain.CheckText("model", cmd.Model, domain.MaxNameBytes); err != nil {
		return Result{}, err
	}
	cmd.Title = domain.CleanTitle(cmd.Title)
	if err := domain.CheckText("title", cmd.Title, domain.MaxTitleBytes); err != nil {
		return Result{}, err
	}
	if cmd.Title == "" {
		return Result{}, domain.Invalid("the title is empty")
	}
	return retryOnConflict(func() (Result, error) {
		s, err := c.loadTrace(ctx, cmd.TraceID)
		if err != nil {
			return Result{}, err
		}
		if !s.Exists || s.Revision != cmd.Revision || !s.TitleDerived {
			return Result{}, nil
		}
		if cmd.Usage == nil {
			cmd.Usage = []events.LLMUsage{}
		}
		return c.appendToTrace(ctx, WorkerActor(cmd.WorkerID), s, events.TraceTitled, events.TraceTitledV1{TraceID: cmd.TraceID, Revision: cmd.Revision,
			Title: cmd.Title, Model: cmd.Model, PromptVersion: domain.TitlePromptVersion, Usage: cmd.Usage})
	})
}

func (c *Streams) loadTrace(ctx context.Context, traceID string) (traces.State, error) {
	evs, err := c.loadStream(ctx, events.TraceStream(traceID))
	if err != nil {
		return traces.State{}, err
	}
	return traces.Fold(traceID, evs)
}

// TitleSourceOf returns a trace's title input for revision (Needed false
// when the revision is no longer current, the trace is gone, or it has its
// title already). It is the claim's answer and reads the trace's stream, as
// LabelSourceOf.
func (c *Streams) TitleSourceOf(ctx context.Context, traceID string, revision int) (jobs.TitleSource, error) {
	s, err := c.loadTrace(ctx, traceID)
	if err != nil {
		return jobs.TitleSource{}, err
	}
	out := jobs.TitleSource{TraceID: traceID, Revision: s.Revision}
	if !s.Exists || s.Revision != revision || !s.TitleDerived {
		return out, nil
	}
	out.Input, out.Needed = domain.TitleInput(s.StepList()), true
	return out, nil
}

// loadTraceFor loads a trace that actor may write to: a worker (reporting
// through the worker service) any owner's, a user only their own; anything
// else is the same not-found as a trace that does not exist.
func (c *Streams) loadTraceFor(ctx context.Context, actor Actor, traceID string) (traces.State, error) {
	st, err := c.loadTrace(ctx, traceID)
	if err != nil {
		return traces.State{}, err
	}
	if !st.Exists || (actor.worker == "" && st.OwnerID != actor.UserID) {
		return traces.State{}, domain.NotFound("trace", traceID)
	}
	return st, nil
}

var _ = onKind(jobs.KindTitle, (*Streams).titleJob)

// titleJob is KindTitle: the claim answers a trace's bounded excerpt (Needed
// false when the revision is stale or titled: a duplicate job costs no
// model call) and the result becomes trace.titled.
func (c *Streams) titleJob() jobActions {
	type call[B any] = jobCall[jobs.TitleJob, B]
	return jobActions{
		jobs.Claim: onJob(func(ctx context.Context, r call[struct{}]) (any, error) {
			return c.TitleSourceOf(ctx, r.ID, r.Job.Revision)
		}),
		jobs.Finish: onJob(func(ctx context.Context, r call[jobs.TitleReport]) (any, error) {
			res, err := RecordTitleHandler{c}.Handle(ctx, RecordTitle{WorkerID: r.Worker, TraceID: r.ID, Revision: r.Job.Revision, Title: r.Body.Title, Model: r.Body.Model, Usage: r.Body.Usage})
			return jobs.TitleRecorded{Recorded: err == nil && res.LastEventID != ""}, err
		}),
	}
}
