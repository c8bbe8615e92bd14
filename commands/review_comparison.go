package commands

import (
	"context"
	"errors"
	"strings"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/comparisons"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/feedback"
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/domain/traces"
)

// ReviewComparison is POST /comparisons: a reviewer's verdict on one
// comparison of the queue (a finding's alternative against the original,
// or two models' preferred actions when FindingID is a models key).
type ReviewComparison struct {
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
func (c *Commands) comparisonFinding(ctx context.Context, ownerID, modelID, findingID string) (events.RewardModelFindingRecordedV1, error) {
	evs, err := c.ModelEvents(ctx, ownerID, modelID)
	if err != nil {
		return events.RewardModelFindingRecordedV1{}, err
	}
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Type != events.RewardModelFindingRecorded {
			continue
		}
		var p events.RewardModelFindingRecordedV1
		if err := evs[i].Decode(&p); err != nil {
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
func (c *Commands) ReviewComparison(ctx context.Context, actor Actor, in ReviewComparison) (ComparisonResult, error) {
	if in.ModelID == "" {
		return ComparisonResult{}, &domain.ValidationError{Code: "invalid_request", Field: "model_id", Message: "model_id is required"}
	}
	if in.FindingID == "" {
		return ComparisonResult{}, &domain.ValidationError{Code: "invalid_request", Field: "finding_id", Message: "finding_id is required"}
	}
	if modelB, _, ok := comparisons.ParseModelsKey(in.FindingID); ok {
		return c.reviewModelComparison(ctx, actor, in, modelB)
	}
	rec, err := c.comparisonFinding(ctx, actor.UserID, in.ModelID, in.FindingID)
	if err != nil {
		return ComparisonResult{}, err
	}
	f := rec.Finding
	if !comparisons.Reviewable(f) {
		return ComparisonResult{}, &domain.ValidationError{Code: "not_comparable", Field: "finding_id", Message: "finding " + f.ID + " offers no alternative action to compare"}
	}
	var out ComparisonResult
	r, err := retryOnConflict(func() (Result, error) {
		st, err := c.ownedTrace(ctx, actor, rec.TraceID)
		if err != nil {
			return Result{}, err
		}
		target := comparisonTarget(st, f)
		if target == nil {
			return Result{}, &domain.ConflictError{Code: "comparison_stale", Message: "the trace changed since this alternative was generated: its action is no longer the one the finding compared"}
		}
		if st.Compared[f.ID+"/"+actor.UserID] {
			return Result{}, &domain.ConflictError{Code: "already_compared", Message: "you already reviewed this comparison"}
		}
		left, right := comparisons.Sides(actor.UserID, f.ID, f.OriginalAction, *f.AlternativeAction)
		preferred, err := comparisons.Decide(left, right, in.Verdict)
		if err != nil {
			return Result{}, err
		}
		var comment *string
		if in.Comment != nil {
			if s := strings.TrimSpace(*in.Comment); s != "" {
				comment = &s
			}
		}
		out.Comparison = events.ComparisonReviewedV1{ComparisonID: newID(), TraceID: st.ID, TraceRevision: st.Revision, StepID: f.StepID,
			StepIndex: target.StepIndex, ToolName: target.ToolName, ReviewerID: actor.Member(), Source: "finding", FindingID: f.ID,
			ModelID: in.ModelID, Attempt: rec.Attempt, Context: target.Context, Left: left, Right: right, Choice: in.Choice,
			Preferred: preferred, Comment: comment}
		return c.appendToTrace(ctx, actor, st, events.ComparisonReviewed, out.Comparison)
	})
	if err != nil {
		return ComparisonResult{}, err
	}
	out.Result = r
	return out, nil
}

// comparisonTarget is the trace's current action the finding describes, or
// nil when the trace no longer has it (a re-import replaced the step, or
// changed what came before it).
func comparisonTarget(st traces.State, f events.Finding) *feedback.Target {
	for _, t := range feedback.Targets(rewardmodels.FeedbackTrace(st)) {
		if t.StepID == f.StepID {
			if t.Action != f.OriginalAction {
				return nil
			}
			return &t
		}
	}
	return nil
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
func (c *Commands) PresentComparison(ctx context.Context, actor Actor, modelID string, attempt int, f events.Finding) (ComparisonItem, bool, error) {
	if !comparisons.Reviewable(f) {
		return ComparisonItem{}, false, nil
	}
	st, err := c.ownedTrace(ctx, actor, f.TraceID)
	var nf *domain.NotFoundError
	if errors.As(err, &nf) {
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
