package commands

import (
	"context"
	"slices"
	"strings"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/comparisons"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/traces"
)

// ReviewComparisonInput is what POST /comparisons asks: a reviewer's verdict on one
// comparison of the queue (a finding's alternative against the original,
// or two models' preferred actions when FindingID is a models key).
type ReviewComparisonInput struct {
	ModelID   string
	FindingID string
	comparisons.Verdict
}

// ComparisonResult is the recorded comparison.
type ComparisonResult struct {
	Result
	Comparison events.ComparisonReviewedV1
}

// comparisonFinding finds a finding in a model's stream as recorded (the
// log, not the read model): its attempt, trace revision and the finding.
func (c *Streams) comparisonFinding(ctx context.Context, ownerID, modelID, findingID string) (events.RewardModelFindingRecordedV1, error) {
	evs, err := c.ModelEvents(ctx, ownerID, modelID)
	if err != nil {
		return events.RewardModelFindingRecordedV1{}, err
	}
	for _, ev := range slices.Backward(evs) {
		if ev.Type != events.RewardModelFindingRecorded {
			continue
		}
		var p events.RewardModelFindingRecordedV1
		if err := ev.Decode(&p); err != nil {
			return events.RewardModelFindingRecordedV1{}, err
		}
		if p.Finding.ID == findingID {
			return p, nil
		}
	}
	return events.RewardModelFindingRecordedV1{}, domain.NotFound("finding", findingID)
}

// ReviewComparison records a reviewer's verdict (comparison.reviewed on the
// trace's stream) after checking, against the log, that the finding is the
// caller's, offers an alternative, still describes the trace's current
// action, and was presented in the order the verdict says. One reviewer
// answers each comparison once (409 after that).
type ReviewComparison struct {
	Actor Actor
	Input ReviewComparisonInput
}

// ReviewComparisonHandler runs ReviewComparison.
type ReviewComparisonHandler struct{ *Streams }

func (c ReviewComparisonHandler) Handle(ctx context.Context, cmd ReviewComparison) (ComparisonResult, error) {
	in := cmd.Input
	if in.ModelID == "" {
		return ComparisonResult{}, domain.InvalidField("model_id", "model_id is required")
	}
	if in.FindingID == "" {
		return ComparisonResult{}, domain.InvalidField("finding_id", "finding_id is required")
	}
	if modelB, _, ok := comparisons.ParseModelsKey(in.FindingID); ok {
		return c.reviewModelComparison(ctx, cmd.Actor, in, modelB)
	}
	rec, err := c.comparisonFinding(ctx, cmd.Actor.UserID, in.ModelID, in.FindingID)
	if err != nil {
		return ComparisonResult{}, err
	}
	f := rec.Finding
	if !comparisons.Reviewable(f) {
		return ComparisonResult{}, &domain.ValidationError{Code: "not_comparable", Field: "finding_id", Message: "finding " + f.ID + " offers no alternative action to compare"}
	}
	var out ComparisonResult
	r, err := c.onTrace(ctx, cmd.Actor, rec.TraceID, func(st traces.State) (string, any, error) {
		target := comparisonTarget(st, f)
		if target == nil {
			return "", nil, &domain.ConflictError{Code: "comparison_stale", Message: "the trace changed since this alternative was generated: its action is no longer the one the finding compared"}
		}
		if st.Compared[f.ID+"/"+cmd.Actor.UserID] {
			return "", nil, &domain.ConflictError{Code: "already_compared", Message: "you already reviewed this comparison"}
		}
		left, right := comparisons.Sides(cmd.Actor.UserID, f.ID, f.OriginalAction, *f.AlternativeAction)
		preferred, err := comparisons.Decide(left, right, in.Verdict)
		if err != nil {
			return "", nil, err
		}
		comment := trimmedComment(in.Comment)
		out.Comparison = events.ComparisonReviewedV1{ComparisonID: newID(), TraceID: st.ID, TraceRevision: st.Revision, StepID: f.StepID,
			StepIndex: target.StepIndex, ToolName: target.ToolName, ReviewerID: cmd.Actor.Member(), Source: "finding", FindingID: f.ID,
			ModelID: in.ModelID, Attempt: rec.Attempt, Context: target.Context, Left: left, Right: right, Choice: in.Choice,
			Preferred: preferred, Comment: comment}
		return events.ComparisonReviewed, out.Comparison, nil
	})
	if err != nil {
		return ComparisonResult{}, err
	}
	out.Result = r
	return out, nil
}

// reviewModelComparison records a verdict on a models comparison (the
// finding id is its key): the comparison is recomputed from the log, so a
// verdict on models that no longer disagree there, or on a presentation
// the queue did not give, is refused.
func (c *Streams) reviewModelComparison(ctx context.Context, actor Actor, in ReviewComparisonInput, modelB string) (ComparisonResult, error) {
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
		comment := trimmedComment(in.Comment)
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

// trimmedComment is a verdict's comment as recorded: trimmed, and nil when
// nothing is left.
func trimmedComment(c *string) *string {
	if c == nil {
		return nil
	}
	if s := strings.TrimSpace(*c); s != "" {
		return &s
	}
	return nil
}
