package commands

import (
	"context"
	"time"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
)

// ClaimCandidate starts a queued candidate for one worker under lease;
// anything else (a duplicate delivery, another worker was first) is a
// ConflictError.
type ClaimCandidate struct {
	WorkerID string
	ID       string
	Lease    time.Duration
}

// ClaimCandidateHandler runs ClaimCandidate.
type ClaimCandidateHandler struct{ *Streams }

// Handle runs the command.
func (c ClaimCandidateHandler) Handle(ctx context.Context, cmd ClaimCandidate) (jobs.EvaluatorCandidateClaim, error) {
	var claim jobs.EvaluatorCandidateClaim
	_, err := retryOnConflict(func() (Result, error) {
		s, err := c.EvaluatorState(ctx)
		if err != nil {
			return Result{}, err
		}
		cand, err := s.DecideClaim(cmd.ID)
		if err != nil {
			return Result{}, err
		}
		secs := int(cmd.Lease / time.Second)
		claim = jobs.EvaluatorCandidateClaim{CandidateID: cmd.ID, BaseModel: cand.BaseModel, Epochs: cand.Epochs, DatasetKey: cand.DatasetKey,
			ArtifactKey: cand.ArtifactKey, IncumbentArtifactKey: cand.IncumbentArtifactKey, LeaseSeconds: secs}
		return c.appendEvaluator(ctx, workerActor(cmd.WorkerID), s, events.EvaluatorCandidateStarted,
			events.EvaluatorCandidateStartedV1{CandidateID: cmd.ID, WorkerID: cmd.WorkerID, LeaseSeconds: secs})
	})
	return claim, err
}
