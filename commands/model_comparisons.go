package commands

import (
	"context"
	"sort"
	"strings"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/comparisons"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/feedback"
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/domain/traces"
)

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
func (c *Commands) ModelComparisons(ctx context.Context, actor Actor, modelIDs []string) ([]ModelComparison, error) {
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
	ids := make([]string, 0, len(traceIDs))
	for id := range traceIDs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
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

// reviewModelComparison records a verdict on a models comparison (the
// finding id is its key): the comparison is recomputed from the log, so a
// verdict on models that no longer disagree there, or on a presentation
// the queue did not give, is refused.
func (c *Commands) reviewModelComparison(ctx context.Context, actor Actor, in ReviewComparison, modelB string) (ComparisonResult, error) {
	for _, id := range []string{in.ModelID, modelB} {
		if _, err := c.ModelEvents(ctx, actor.UserID, id); err != nil {
			return ComparisonResult{}, err
		}
	}
	var out ComparisonResult
	r, err := retryOnConflict(func() (Result, error) {
		all, err := c.ModelComparisons(ctx, actor, []string{in.ModelID, modelB})
		if err != nil {
			return Result{}, err
		}
		var mc *ModelComparison
		for i := range all {
			if all[i].Key == in.FindingID && all[i].ModelA == in.ModelID {
				mc = &all[i]
			}
		}
		if mc == nil {
			return Result{}, &domain.ConflictError{Code: "comparison_stale",
				Message: "these models no longer prefer different actions for this context (a trace or its scores changed): ask the queue again"}
		}
		if mc.Reviewed {
			return Result{}, &domain.ConflictError{Code: "already_compared", Message: "you already reviewed this comparison"}
		}
		preferred, err := comparisons.Decide(mc.Left, mc.Right, in.Verdict)
		if err != nil {
			return Result{}, err
		}
		var comment *string
		if in.Comment != nil {
			if s := strings.TrimSpace(*in.Comment); s != "" {
				comment = &s
			}
		}
		out.Comparison = events.ComparisonReviewedV1{ComparisonID: newID(), TraceID: mc.Trace.ID, TraceRevision: mc.Trace.Revision,
			StepID: mc.A.StepID, StepIndex: mc.A.StepIndex, ToolName: mc.A.ToolName, ReviewerID: actor.Member(),
			Source: events.ComparisonFromModels, FindingID: mc.Key, ModelID: mc.ModelA, OtherModelID: mc.ModelB, ContextID: mc.ContextID,
			Context: mc.Context, Left: mc.Left, Right: mc.Right, Choice: in.Choice, Preferred: preferred, Comment: comment}
		return c.appendToTrace(ctx, actor, mc.Trace, events.ComparisonReviewed, out.Comparison)
	})
	if err != nil {
		return ComparisonResult{}, err
	}
	out.Result = r
	return out, nil
}
