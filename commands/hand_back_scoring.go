package commands

import (
	"context"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/rewardmodels"
)

// HandBackScoring returns the holder's running run to the queue (the worker
// is stopping); the dispatch projection publishes the job again.
type HandBackScoring struct {
	WorkerID string
	TraceID  string
	ModelID  string
	RunID    string
	Reason   string
}

// HandBackScoringHandler runs HandBackScoring.
type HandBackScoringHandler struct{ *Streams }

// Handle runs the command.
func (c HandBackScoringHandler) Handle(ctx context.Context, cmd HandBackScoring) (Result, error) {
	sc, _, owner, err := c.loadScoring(ctx, cmd.TraceID, cmd.ModelID)
	if err != nil {
		return Result{}, err
	}
	if sc.RunID != cmd.RunID || sc.Status != rewardmodels.RunRunning || sc.WorkerID != cmd.WorkerID {
		return Result{}, &domain.ConflictError{Code: "not_claimable", Message: "worker " + cmd.WorkerID + " does not hold scoring run " + cmd.RunID}
	}
	if cmd.Reason == "" {
		cmd.Reason = "worker " + cmd.WorkerID + " stopped"
	}
	stream := events.ScoringStream(cmd.TraceID, cmd.ModelID)
	return c.append(ctx, workerActor(cmd.WorkerID), map[string]int64{stream: sc.Version}, []events.New{{ID: newID(), Stream: stream, OwnerID: owner,
		Type: events.ScoringRunRequeued, Payload: events.ScoringRunRequeuedV1{RunID: cmd.RunID, TraceID: cmd.TraceID, ModelID: cmd.ModelID, WorkerID: cmd.WorkerID,
			Reason: events.RequeueHandedBack, Detail: tail(cmd.Reason, 500)}}})
}
