package commands

import (
	"context"
	"time"
)

// ClaimTraining starts an attempt for one worker. A model that is not queued
// (a duplicate delivery, another worker was first) is a ConflictError.
type ClaimTraining struct {
	WorkerID string
	ModelID  string
	Attempt  int
	Lease    time.Duration
}

// ClaimTrainingHandler runs ClaimTraining.
type ClaimTrainingHandler struct{ *Streams }

// Handle runs the command.
func (c ClaimTrainingHandler) Handle(ctx context.Context, cmd ClaimTraining) (ClaimedJob, error) {
	return c.claimTraining(ctx, cmd.WorkerID, "", cmd.ModelID, cmd.Attempt, cmd.Lease)
}
