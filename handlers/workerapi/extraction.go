package workerapi

import (
	"net/http"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/jobs"
)

// The extraction routes: an extraction worker claims an attempt, renews its
// lease with progress, reports each trace's findings, and finishes (or
// fails) the extraction, or hands it back when it stops. Findings are checked against the source here, by
// the same domain rules the worker used.

func (a *API) claimExtraction(r *http.Request) (any, error) {
	var req jobs.AttemptRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	if req.WorkerID == "" {
		return nil, domain.Invalid("worker_id is required")
	}
	c, err := a.cmds.ClaimExtraction(r.Context(), req.WorkerID, r.PathValue("model_id"), req.Attempt, a.lease)
	if err != nil {
		return nil, err
	}
	return jobs.ExtractionClaim{ModelID: c.ModelID, OwnerID: c.OwnerID, Attempt: c.Attempt, InputsKey: c.InputsKey,
		ClassifierModel: c.ClassifierModel, LeaseSeconds: c.LeaseSeconds, TargetsTotal: c.TargetsTotal, TargetsDone: c.TargetsDone}, nil
}

func (a *API) extractionProgress(r *http.Request) (any, error) {
	var req jobs.ExtractionProgress
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	_, err := a.cmds.ExtractionProgress(r.Context(), req.WorkerID, r.PathValue("model_id"), req.Attempt, req.TargetsDone)
	return jobs.Ack{OK: err == nil}, err
}

func (a *API) extractionFindings(r *http.Request) (any, error) {
	var req jobs.ExtractionFindings
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	_, err := a.cmds.RecordFeedback(r.Context(), req.WorkerID, r.PathValue("model_id"), req.RewardModelFeedbackExtractedV1)
	return jobs.Ack{OK: err == nil}, err
}

func (a *API) extractionFinished(r *http.Request) (any, error) {
	var req jobs.ExtractionFinished
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	_, err := a.cmds.FinishExtraction(r.Context(), req.WorkerID, r.PathValue("model_id"), req.Attempt, req.Error)
	return jobs.Ack{OK: err == nil}, err
}

func (a *API) extractionHandBack(r *http.Request) (any, error) {
	var req jobs.ExtractionHandBack
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	_, err := a.cmds.HandBackExtraction(r.Context(), req.WorkerID, r.PathValue("model_id"), req.Attempt, req.Reason)
	return jobs.Ack{OK: err == nil}, err
}
