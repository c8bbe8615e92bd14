package commands

import (
	"context"
	"errors"
	"time"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/rewardmodels"
)

// ClaimNextTraining claims the first of candidates (oldest first) that is
// still claimable for a free worker; compute is where that worker runs.
// A candidate another worker claimed first, or that changed since the read
// model listed it, is skipped. ok is false when none could be claimed.
type ClaimNextTraining struct {
	WorkerID   string
	Compute    string
	Candidates []rewardmodels.TrainingCandidate
	Lease      time.Duration
}

// ClaimNextTrainingHandler runs ClaimNextTraining.
type ClaimNextTrainingHandler struct{ *Streams }

// Handle runs the command.
func (c ClaimNextTrainingHandler) Handle(ctx context.Context, cmd ClaimNextTraining) (ClaimedJob, bool, error) {
	for _, cand := range cmd.Candidates {
		j, err := c.claimTraining(ctx, cmd.WorkerID, cmd.Compute, cand.ModelID, cand.Attempt, cmd.Lease)
		var conflict *domain.ConflictError
		var version *domain.VersionConflictError
		var notFound *domain.NotFoundError
		switch {
		case err == nil:
			return j, true, nil
		case errors.As(err, &conflict), errors.As(err, &version), errors.As(err, &notFound):
			continue // taken or changed meanwhile: the next one
		default:
			return ClaimedJob{}, false, err
		}
	}
	return ClaimedJob{}, false, nil
}
