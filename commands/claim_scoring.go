package commands

import (
	"context"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/rewardmodels"
)

// ClaimScoring starts a queued run for one worker and returns its items key.
type ClaimScoring struct {
	WorkerID string
	TraceID  string
	ModelID  string
	RunID    string
}

// ClaimScoringHandler runs ClaimScoring.
type ClaimScoringHandler struct{ *Streams }

// Handle runs the command.
func (c ClaimScoringHandler) Handle(ctx context.Context, cmd ClaimScoring) (string, error) {
	sc, req, owner, err := c.loadScoring(ctx, cmd.TraceID, cmd.ModelID)
	if err != nil {
		return "", err
	}
	if sc.RunID != cmd.RunID || sc.Status != rewardmodels.RunQueued {
		return "", &domain.ConflictError{Code: "not_claimable", Message: "scoring run " + cmd.RunID + " is not queued"}
	}
	_, err = c.append(ctx, workerActor(cmd.WorkerID), map[string]int64{events.ScoringStream(cmd.TraceID, cmd.ModelID): sc.Version}, []events.New{{
		ID: newID(), Stream: events.ScoringStream(cmd.TraceID, cmd.ModelID), OwnerID: owner, Type: events.ScoringRunStarted,
		Payload: events.ScoringRunStartedV1{RunID: cmd.RunID, TraceID: cmd.TraceID, ModelID: cmd.ModelID, WorkerID: cmd.WorkerID}}})
	return req.ItemsKey, err
}
