package commands

import (
	"context"
	"errors"
	"maps"
	"slices"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/comparisons"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/feedback"
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/domain/traces"
)

// comparisonTarget is the trace's current action the finding describes, or
// nil when the trace no longer has it (a re-import replaced the step, or
// changed what came before it).
func comparisonTarget(st traces.State, f events.Finding) *feedback.Target {
	ts := feedback.Targets(rewardmodels.FeedbackTrace(st))
	i := slices.IndexFunc(ts, func(t feedback.Target) bool { return t.StepID == f.StepID })
	if i < 0 || ts[i].Action != f.OriginalAction {
		return nil
	}
	return &ts[i]
}

// ComparisonItem is one comparison of a reviewer's queue, as the log says
// it would be recorded now.
type ComparisonItem struct {
	ModelID       string
	Attempt       int
	Finding       events.Finding
	TraceID       string
	TraceTitle    string
	TraceRevision int
	StepIndex     int
	Context       string
	Left, Right   events.ComparisonSide
}

// PresentComparison returns the comparison a finding offers the actor, or
// false when it offers none (no alternative, a stale trace, already
// answered). The queue lists only what POST /comparisons would accept.
// It reads the log for that reason: it shares comparisonTarget with the
// command.
func (c *Streams) PresentComparison(ctx context.Context, actor Actor, modelID string, attempt int, f events.Finding) (ComparisonItem, bool, error) {
	if !comparisons.Reviewable(f) {
		return ComparisonItem{}, false, nil
	}
	st, err := c.ownedTrace(ctx, actor, f.TraceID)
	if _, ok := errors.AsType[*domain.NotFoundError](err); ok {
		return ComparisonItem{}, false, nil
	}
	if err != nil {
		return ComparisonItem{}, false, err
	}
	target := comparisonTarget(st, f)
	if target == nil || st.Compared[f.ID+"/"+actor.UserID] {
		return ComparisonItem{}, false, nil
	}
	left, right := comparisons.Sides(actor.UserID, f.ID, f.OriginalAction, *f.AlternativeAction)
	return ComparisonItem{ModelID: modelID, Attempt: attempt, Finding: f, TraceID: st.ID, TraceTitle: st.Title, TraceRevision: st.Revision,
		StepIndex: target.StepIndex, Context: target.Context, Left: left, Right: right}, true, nil
}

// ModelComparison is a comparison of two of the actor's models' preferred
// actions, as the log says it would be recorded now.
type ModelComparison struct {
	comparisons.ModelPair
	// Trace is the trace of model A's preferred action: the comparison is
	// recorded on its stream.
	Trace       traces.State
	Left, Right events.ComparisonSide
	// Reviewed is true when the actor already answered it.
	Reviewed bool
}

// ModelComparisons finds, from the log, every context where two of the
// given models of the actor prefer different actions (comparisons.
// ModelPairs): the models' latest action scores of each trace's current
// revision, over the traces they scored. Models that are not the actor's
// or have no action scores contribute nothing.
// It stays beside the command because ReviewComparison checks a verdict
// against this very answer: the queue offers only what the command accepts.
func (c *Streams) ModelComparisons(ctx context.Context, actor Actor, modelIDs []string) ([]ModelComparison, error) {
	if len(modelIDs) < 2 {
		return nil, nil
	}
	streams := make([]string, len(modelIDs))
	for i, id := range modelIDs {
		streams[i] = events.ScoresStream(id)
	}
	loaded, err := c.store.LoadStreams(ctx, streams)
	if err != nil {
		return nil, err
	}
	type key struct{ model, trace, step string }
	latest := map[key]events.ActionScore{} // later batches replace earlier ones
	traceIDs := map[string]bool{}
	for _, stream := range streams {
		for _, e := range loaded[stream] {
			if e.OwnerID != actor.UserID || e.Type != events.ActionsScored {
				continue
			}
			var p events.ActionsScoredV1
			if err := e.Decode(&p); err != nil {
				return nil, err
			}
			for _, s := range p.Scores {
				latest[key{p.ModelID, s.TraceID, s.StepID}] = s
				traceIDs[s.TraceID] = true
			}
		}
	}
	ids := slices.Sorted(maps.Keys(traceIDs))
	// One read of the log for every scored trace (a query per trace made
	// the queue 17× the read itself at 2,000 traces: make bench-comparisons).
	// A trace deleted since it was scored is absent.
	states, err := c.ownedTraces(ctx, actor, ids)
	if err != nil {
		return nil, err
	}
	var targets []feedback.Target
	for _, id := range ids {
		if st, ok := states[id]; ok {
			targets = append(targets, feedback.Targets(rewardmodels.FeedbackTrace(st))...)
		}
	}
	var scores []comparisons.ModelScore
	for k, s := range latest {
		if st, ok := states[k.trace]; ok && st.Revision == s.Revision {
			scores = append(scores, comparisons.ModelScore{ModelID: k.model, TraceID: k.trace, StepID: k.step, Score: s.Score})
		}
	}
	var out []ModelComparison
	for _, p := range comparisons.ModelPairs(targets, scores) {
		st := states[p.A.TraceID]
		left, right := comparisons.ModelSides(actor.UserID, p)
		out = append(out, ModelComparison{ModelPair: p, Trace: st, Left: left, Right: right, Reviewed: st.Compared[p.Key+"/"+actor.UserID]})
	}
	return out, nil
}
