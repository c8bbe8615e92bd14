package workerapi

import (
	"net/http"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/jobs"
)

// registerEvaluator mounts the shared-evaluator candidate routes: a claim
// (only a queued candidate can be claimed) under lease, its heartbeat, the
// hand-back of a stopping worker, the trained report with the
// benchmark margins, and the failure report.
func (a *API) registerEvaluator(route func(string, func(*http.Request) (any, error))) {
	route(jobs.RouteClaimEvaluatorCandidate, a.claimCandidate)
	route(jobs.RouteEvaluatorCandidateSucceeded, a.candidateSucceeded)
	route(jobs.RouteEvaluatorCandidateFailed, a.candidateFailed)
	route(jobs.RouteEvaluatorCandidateHandBack, a.candidateHandBack)
	route(jobs.RouteEvaluatorCandidateHeartbeat, a.candidateHeartbeat)
	route(jobs.RouteClaimEvaluatorScoring, a.claimEvaluatorScoring)
	route(jobs.RouteEvaluatorScoringScored, a.evaluatorScored)
	route(jobs.RouteEvaluatorScoringFailed, a.evaluatorScoringFailed)
}

func (a *API) claimCandidate(r *http.Request) (any, error) {
	var req jobs.EvaluatorCandidateRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	if req.WorkerID == "" {
		return nil, domain.Invalid("worker_id is required")
	}
	c, err := a.cmds.ClaimCandidate(r.Context(), req.WorkerID, r.PathValue("candidate_id"), a.lease)
	a.claimed("evaluator_train", err)
	return c, err
}

func (a *API) candidateHeartbeat(r *http.Request) (any, error) {
	var req jobs.EvaluatorCandidateRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	_, err := a.cmds.CandidateHeartbeat(r.Context(), req.WorkerID, r.PathValue("candidate_id"))
	return jobs.Ack{OK: err == nil}, err
}

func (a *API) candidateSucceeded(r *http.Request) (any, error) {
	var req jobs.EvaluatorCandidateSucceeded
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	_, err := a.cmds.CompleteCandidate(r.Context(), req.WorkerID, r.PathValue("candidate_id"), req)
	a.reported("evaluator_train", "succeeded", err)
	return jobs.Ack{OK: err == nil}, err
}

func (a *API) candidateFailed(r *http.Request) (any, error) {
	var req jobs.EvaluatorCandidateFailed
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	_, err := a.cmds.FailCandidate(r.Context(), req.WorkerID, r.PathValue("candidate_id"), req.Error)
	a.reported("evaluator_train", "failed", err)
	return jobs.Ack{OK: err == nil}, err
}

func (a *API) candidateHandBack(r *http.Request) (any, error) {
	var req jobs.EvaluatorCandidateHandBack
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	_, err := a.cmds.HandBackCandidate(r.Context(), req.WorkerID, r.PathValue("candidate_id"), req.Reason)
	a.reported("evaluator_train", "handed_back", err)
	return jobs.Ack{OK: err == nil}, err
}

func (a *API) claimEvaluatorScoring(r *http.Request) (any, error) {
	var req jobs.EvaluatorCandidateRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	if req.WorkerID == "" {
		return nil, domain.Invalid("worker_id is required")
	}
	c, err := a.cmds.ClaimEvaluatorScoring(r.Context(), r.PathValue("trace_id"))
	a.claimed("evaluator_score", err)
	return c, err
}

func (a *API) evaluatorScored(r *http.Request) (any, error) {
	var req jobs.EvaluatorScored
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	_, err := a.cmds.RecordEvaluatorScores(r.Context(), r.PathValue("trace_id"), req)
	a.reported("evaluator_score", "succeeded", err)
	return jobs.Ack{OK: err == nil}, err
}

func (a *API) evaluatorScoringFailed(r *http.Request) (any, error) {
	var req jobs.EvaluatorScoringFailed
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	_, err := a.cmds.FailEvaluatorScoring(r.Context(), r.PathValue("trace_id"), req)
	a.reported("evaluator_score", "failed", err)
	return jobs.Ack{OK: err == nil}, err
}
