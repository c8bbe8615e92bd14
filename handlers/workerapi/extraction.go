package workerapi

import (
	"net/http"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
)

// The extraction routes: an extraction worker claims an attempt, renews its
// lease with progress, reports each trace's findings, and finishes (or
// fails) the extraction. Findings are checked against the source here, by
// the same domain rules the worker used.

type extractionClaimResponse struct {
	ModelID         string `json:"model_id"`
	OwnerID         string `json:"owner_id"`
	Attempt         int    `json:"attempt"`
	InputsKey       string `json:"inputs_key"`
	ClassifierModel string `json:"classifier_model"`
	LeaseSeconds    int    `json:"lease_seconds"`
	TargetsTotal    int    `json:"targets_total"`
	TargetsDone     int    `json:"targets_done"`
}

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
	return extractionClaimResponse{ModelID: c.ModelID, OwnerID: c.OwnerID, Attempt: c.Attempt, InputsKey: c.InputsKey,
		ClassifierModel: c.ClassifierModel, LeaseSeconds: c.LeaseSeconds, TargetsTotal: c.TargetsTotal, TargetsDone: c.TargetsDone}, nil
}

func (a *API) extractionProgress(r *http.Request) (any, error) {
	var req struct {
		jobs.AttemptRequest
		TargetsDone int `json:"targets_done"`
	}
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	_, err := a.cmds.ExtractionProgress(r.Context(), req.WorkerID, r.PathValue("model_id"), req.Attempt, req.TargetsDone)
	return map[string]bool{"ok": err == nil}, err
}

func (a *API) extractionFindings(r *http.Request) (any, error) {
	var req struct {
		WorkerID string `json:"worker_id"`
		events.RewardModelFeedbackExtractedV1
	}
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	_, err := a.cmds.RecordFeedback(r.Context(), req.WorkerID, r.PathValue("model_id"), req.RewardModelFeedbackExtractedV1)
	return map[string]bool{"ok": err == nil}, err
}

func (a *API) extractionFinished(r *http.Request) (any, error) {
	var req struct {
		jobs.AttemptRequest
		Error string `json:"error"`
	}
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	_, err := a.cmds.FinishExtraction(r.Context(), req.WorkerID, r.PathValue("model_id"), req.Attempt, req.Error)
	return map[string]bool{"ok": err == nil}, err
}
