package commands

import (
	"context"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/feedback"
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/domain/traces"
)

// RecordFeedback appends one trace's findings after checking every one
// against the trace as the model was requested on it (targets, evidence,
// verbatim quotes, reviewed alternatives). A malformed report changes
// nothing.
type RecordFeedback struct {
	WorkerID string
	ModelID  string
	Feedback events.RewardModelFeedbackExtractedV1
}

// RecordFeedbackHandler runs RecordFeedback.
type RecordFeedbackHandler struct{ *Streams }

// Handle runs the command.
func (c RecordFeedbackHandler) Handle(ctx context.Context, cmd RecordFeedback) (Result, error) {
	p := cmd.Feedback
	return retryOnConflict(func() (Result, error) {
		st, err := c.loadModel(ctx, "", cmd.ModelID)
		if err != nil {
			return Result{}, err
		}
		if err := rewardmodels.CheckExtractionHolder(st, p.Attempt, cmd.WorkerID); err != nil {
			return Result{}, err
		}
		var tr *feedback.Trace
		for _, id := range st.Requested.TraceIDs {
			if id != p.TraceID {
				continue
			}
			asOf, err := c.QueuedAt(ctx, st)
			if err != nil {
				return Result{}, err
			}
			loaded, err := c.store.LoadStreamsAsOf(ctx, []string{events.TraceStream(id)}, asOf)
			if err != nil {
				return Result{}, err
			}
			s, err := traces.Fold("", loaded[events.TraceStream(id)])
			if err != nil {
				return Result{}, err
			}
			if s.Exists {
				ft := rewardmodels.FeedbackTrace(s)
				tr = &ft
			}
		}
		p.ModelID, p.WorkerID = st.ID, cmd.WorkerID
		if tr != nil {
			p.InputHash = feedback.InputHash(*tr) // computed here, from the log, never taken from the worker
		}
		if p.Findings == nil {
			p.Findings = []events.Finding{}
		}
		if p.Usage == nil {
			p.Usage = []events.LLMUsage{}
		}
		if err := rewardmodels.DecideRecordFeedback(st, cmd.WorkerID, p, tr); err != nil {
			return Result{}, err
		}
		stream := events.RewardModelStream(st.ID)
		return c.append(ctx, workerActor(cmd.WorkerID), map[string]int64{stream: st.Version}, recordEvents(stream, st.OwnerID, p))
	})
}
