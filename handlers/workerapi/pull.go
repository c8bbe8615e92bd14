package workerapi

import (
	"context"
	"net/http"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/rewardmodels"
)

// TrainingQueue nominates claimable training attempts, oldest first (the
// read model's ClaimableTraining); the model's stream decides each claim.
type TrainingQueue interface {
	ClaimableTraining(ctx context.Context, limit int) ([]rewardmodels.TrainingCandidate, error)
}

// claimCandidates is how many nominated models one claim-next tries: enough
// that a burst of workers racing for the head of the queue all find one.
const claimCandidates = 16

// WithTrainingQueue lets free workers pull training attempts
// (jobs.RouteClaimNextTraining).
func (a *API) WithTrainingQueue(q TrainingQueue) *API {
	a.queue = q
	return a
}

// hello answers a worker's start-up check: reaching it at all proves the
// address, and the route's token check proves the token.
func (a *API) hello(r *http.Request) (any, error) {
	var req jobs.Hello
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	return jobs.HelloAnswer{OK: true, LeaseSeconds: int(a.lease.Seconds())}, nil
}

// claimNextTraining gives a free worker the oldest claimable attempt, or
// {"job": null} when nothing is waiting.
func (a *API) claimNextTraining(r *http.Request) (any, error) {
	var req jobs.ClaimNextTraining
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	if req.WorkerID == "" {
		return nil, domain.Invalid("worker_id is required")
	}
	if a.queue == nil {
		return nil, &domain.UnavailableError{Message: "this API instance serves no training queue (workerapi.WithTrainingQueue is not wired)"}
	}
	cands, err := a.queue.ClaimableTraining(r.Context(), claimCandidates)
	if err != nil {
		return nil, err
	}
	j, ok, err := a.cmds.ClaimNextTraining(r.Context(), req.WorkerID, req.Compute, cands, a.lease)
	if err != nil {
		return nil, err
	}
	if !ok {
		return jobs.NextTrainingClaim{}, nil
	}
	a.claimed("train", nil)
	return jobs.NextTrainingClaim{Job: &jobs.TrainingClaim{ModelID: j.ModelID, OwnerID: j.OwnerID, Name: j.Name, BaseModel: j.BaseModel,
		DatasetKey: j.DatasetKey, ArtifactKey: j.ArtifactKey, Attempt: j.Attempt, Epochs: j.Epochs, LeaseSeconds: j.LeaseSeconds,
		CorrelationID: j.CorrelationID}}, nil
}

// handBack returns a stopping worker's attempt to the queue.
func (a *API) handBack(r *http.Request) (any, error) {
	var req jobs.HandBack
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	_, err := a.cmds.HandBackTraining(r.Context(), req.WorkerID, r.PathValue("model_id"), req.Attempt, req.Reason)
	a.reported("train", "handed_back", err)
	return jobs.Ack{OK: err == nil}, err
}
