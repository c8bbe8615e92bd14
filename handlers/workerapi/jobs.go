package workerapi

import (
	"net/http"
	"slices"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/jobs"
)

// job serves RouteJob: the kind's action on the job, counted by the
// observer (claims; finish, fail and hand-back as the job's outcome). The
// command side decides what the action does for the kind (commands.Job).
func (a *API) job(r *http.Request) (any, error) {
	kind, action := jobs.Kind(r.PathValue("kind")), r.PathValue("action")
	var c jobs.Call
	if err := decode(r, &c); err != nil {
		return nil, err
	}
	if a.Fleet != nil && c.WorkerID != "" {
		a.Fleet.touched(c.WorkerID)
	}
	out, err := a.Cmds.Job.Handle(r.Context(), commands.Job{Kind: kind, ID: r.PathValue("id"), Action: action, Call: c, Lease: a.Lease})
	if a.Observer != nil && slices.Contains(jobs.Kinds(), kind) { // a path's kind becomes a label only when it is one
		switch action {
		case jobs.Claim:
			a.Observer.JobClaimed(string(kind), err != nil)
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
	a.Observer.JobReported(string(kind), outcome)
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
		return nil, domain.InvalidField("worker_id", "worker_id is required")
	}
	if a.Fleet != nil {
		a.Fleet.polled(req)
	}
	if a.TrainingQueue == nil {
		return nil, &domain.UnavailableError{Message: "this API instance serves no training queue (workerapi.Config.TrainingQueue is not set)"}
	}
	cands, err := a.TrainingQueue.ClaimableTraining(r.Context(), claimCandidates)
	if err != nil {
		return nil, err
	}
	j, ok, err := a.Cmds.ClaimNextTraining.Handle(r.Context(), commands.ClaimNextTraining{WorkerID: req.WorkerID, Compute: req.Compute, Candidates: cands, Lease: a.Lease})
	if err != nil {
		return nil, err
	}
	if !ok {
		return jobs.NextTrainingClaim{}, nil
	}
	if a.Observer != nil {
		a.Observer.JobClaimed(string(jobs.KindTrain), false)
	}
	return jobs.NextTrainingClaim{Job: &j.TrainingClaim}, nil
}
