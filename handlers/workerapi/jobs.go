package workerapi

import (
	"context"
	"net/http"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/jobs"
)

// actions is a kind's table: what each action it supports does. An action
// a kind lacks is a 404, like an unknown kind.
type actions map[string]func(ctx context.Context, c jobs.Call, id string) (any, error)

// call is one RouteJob call as a kind's action sees it: the job's message
// decoded as M, the body as B.
type call[M, B any] struct {
	Worker, ID string
	Job        M
	Body       B
	Error      string
	Reason     string
}

// on makes a typed action: it decodes the job's message into M and the
// body into B (strictly: an unknown field is 422; an absent body is B's
// zero value) before fn runs.
func on[M, B any](fn func(ctx context.Context, c call[M, B]) (any, error)) func(context.Context, jobs.Call, string) (any, error) {
	return func(ctx context.Context, raw jobs.Call, id string) (any, error) {
		c := call[M, B]{Worker: raw.WorkerID, ID: id, Error: raw.Error, Reason: raw.Reason}
		if len(raw.Job) > 0 {
			if err := strict(raw.Job, &c.Job, "job"); err != nil {
				return nil, err
			}
		}
		if len(raw.Body) > 0 && string(raw.Body) != "null" {
			if err := strict(raw.Body, &c.Body, "body"); err != nil {
				return nil, err
			}
		}
		return fn(ctx, c)
	}
}

// ack is the answer to a report: ok when it was recorded.
func ack(_ commands.Result, err error) (any, error) { return jobs.Ack{OK: err == nil}, err }

// job serves RouteJob: the kind's action on the job, counted by the
// observer (claims; finish, fail and hand-back as the job's outcome).
func (a *API) job(r *http.Request) (any, error) {
	kind, action := jobs.Kind(r.PathValue("kind")), r.PathValue("action")
	fn := a.kinds[kind][action]
	if fn == nil {
		return nil, domain.NotFound("worker-service action", string(kind)+"/"+action)
	}
	var c jobs.Call
	if err := decode(r, &c); err != nil {
		return nil, err
	}
	if c.WorkerID == "" {
		return nil, &domain.ValidationError{Code: "invalid_request", Field: "worker_id", Message: "worker_id is required"}
	}
	out, err := fn(r.Context(), c, r.PathValue("id"))
	if a.obs != nil {
		switch action {
		case jobs.Claim:
			a.obs.JobClaimed(string(kind), err != nil)
		case jobs.Finish, jobs.Fail, jobs.HandBack:
			a.reported(kind, action, err)
		}
	}
	return out, err
}

// reported counts a job's outcome: the action the API accepted (succeeded,
// failed, handed_back), or "rejected" when it refused it (a lost lease, a
// bad payload).
func (a *API) reported(kind jobs.Kind, action string, err error) {
	outcome := map[string]string{jobs.Finish: "succeeded", jobs.Fail: "failed", jobs.HandBack: "handed_back"}[action]
	if err != nil {
		outcome = "rejected"
	}
	a.obs.JobReported(string(kind), outcome)
}

// claimCandidates is how many nominated models one claim-next tries: enough
// that a burst of workers racing for the head of the queue all find one.
const claimCandidates = 16

// claimNext gives a free worker the oldest claimable attempt of a pulled
// kind (training), or {"job": null} when nothing is waiting.
func (a *API) claimNext(r *http.Request) (any, error) {
	if kind := jobs.Kind(r.PathValue("kind")); kind != jobs.KindTrain {
		return nil, domain.NotFound("pulled job kind", string(kind))
	}
	var req jobs.ClaimNextTraining
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	if req.WorkerID == "" {
		return nil, &domain.ValidationError{Code: "invalid_request", Field: "worker_id", Message: "worker_id is required"}
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
	if a.obs != nil {
		a.obs.JobClaimed(string(jobs.KindTrain), false)
	}
	claim := trainingClaim(j)
	return jobs.NextTrainingClaim{Job: &claim}, nil
}
