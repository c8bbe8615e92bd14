package usecase

import (
	"context"
	"strconv"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/projections/readmodel"
)

// ComparisonQueueItem is one comparison a reviewer is asked about: two
// actions for the same prior context, left and right in the order recorded
// with the verdict. The kinds are there for the POST (which checks them);
// a reviewing client shows only the actions.
type ComparisonQueueItem struct {
	ModelID       string                `json:"model_id"`
	FindingID     string                `json:"finding_id"`
	TraceID       string                `json:"trace_id"`
	TraceTitle    string                `json:"trace_title"`
	TraceRevision int                   `json:"trace_revision"`
	StepID        string                `json:"step_id"`
	StepIndex     int                   `json:"step_index"`
	ToolName      *string               `json:"tool_name"`
	Source        string                `json:"source"`
	Context       string                `json:"context"`
	Left          events.ComparisonSide `json:"left"`
	Right         events.ComparisonSide `json:"right"`
}

// ComparisonQueue is GET /comparisons/queue.
type ComparisonQueue struct {
	Items []ComparisonQueueItem `json:"items"`
}

// DefaultQueueLimit and MaxQueueLimit bound ?limit of the queue.
const (
	DefaultQueueLimit = 20
	MaxQueueLimit     = 100
)

// QueueLimit reads the ?limit of a queue (the comparison queue's, the
// review queue's): def when raw is empty, else an integer from 1 to max.
func QueueLimit(raw string, def, max int) (int, error) {
	if raw == "" {
		return def, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 || n > max {
		return 0, rangeError("limit", 1, max)
	}
	return n, nil
}

// ComparisonQueue lists up to limit comparisons the caller has not reviewed:
// first findings with alternatives (the read model proposes them, each is
// checked against the log: its trace still has that action), then two of
// the caller's models' preferred actions where they disagree (found from
// the log). Everything listed is something POST /comparisons accepts.
func (b Backend) ComparisonQueue(ctx context.Context, caller *readmodel.Caller, limit int) (ComparisonQueue, error) {
	out := ComparisonQueue{Items: []ComparisonQueueItem{}}
	cands, err := b.Queries.ComparisonCandidates(ctx, caller.UserID, caller.UserID, limit*4)
	if err != nil {
		return out, err
	}
	for _, c := range cands {
		if len(out.Items) == limit {
			break
		}
		it, ok, err := b.Cmds.Streams.PresentComparison(ctx, Actor(caller), c.ModelID, c.Attempt, c.Finding)
		if err != nil {
			return out, err
		}
		if !ok {
			continue
		}
		out.Items = append(out.Items, ComparisonQueueItem{ModelID: it.ModelID, FindingID: it.Finding.ID, TraceID: it.TraceID,
			TraceTitle: it.TraceTitle, TraceRevision: it.TraceRevision, StepID: it.Finding.StepID, StepIndex: it.StepIndex, ToolName: NonEmpty(it.Finding.ToolName),
			Source: it.Finding.Source, Context: it.Context, Left: it.Left, Right: it.Right})
	}
	if len(out.Items) == limit {
		return out, nil
	}
	// Then two models' preferred actions where they disagree.
	models, err := b.Queries.ScoringModels(ctx, caller.UserID)
	if err != nil {
		return out, err
	}
	mcs, err := b.Cmds.Streams.ModelComparisons(ctx, Actor(caller), models)
	if err != nil {
		return out, err
	}
	for _, mc := range mcs {
		if len(out.Items) == limit {
			break
		}
		if mc.Reviewed {
			continue
		}
		out.Items = append(out.Items, ComparisonQueueItem{ModelID: mc.ModelA, FindingID: mc.Key, TraceID: mc.Trace.ID,
			TraceTitle: mc.Trace.Title, TraceRevision: mc.Trace.Revision, StepID: mc.A.StepID, StepIndex: mc.A.StepIndex, ToolName: NonEmpty(mc.A.ToolName),
			Source: events.ComparisonFromModels, Context: mc.Context, Left: mc.Left, Right: mc.Right})
	}
	return out, nil
}

// ReviewComparison records the caller's verdict and returns it once the
// read model has it (so the queue no longer lists it).
func (b Backend) ReviewComparison(ctx context.Context, caller *readmodel.Caller, in commands.ReviewComparisonInput) (events.ComparisonReviewedV1, error) {
	if in.Choice == "" {
		return events.ComparisonReviewedV1{}, domain.InvalidField("choice", "choice is required (left, right or tie)")
	}
	res, err := b.Cmds.ReviewComparison.Handle(ctx, commands.ReviewComparison{Actor: Actor(caller), Input: in})
	if err := b.applied(ctx, res.Result, err); err != nil {
		return events.ComparisonReviewedV1{}, err
	}
	return res.Comparison, nil
}
