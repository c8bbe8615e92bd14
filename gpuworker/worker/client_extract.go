package worker

import (
	"context"
	"net/url"

	"github.com/criticml/critic/domain/events"
)

// ExtractionClaim is the answer to an extraction claim.
type ExtractionClaim struct {
	ModelID         string `json:"model_id"`
	OwnerID         string `json:"owner_id"`
	Attempt         int    `json:"attempt"`
	InputsKey       string `json:"inputs_key"`
	ClassifierModel string `json:"classifier_model"`
	LeaseSeconds    int    `json:"lease_seconds"`
	TargetsTotal    int    `json:"targets_total"`
	TargetsDone     int    `json:"targets_done"`
}

// ClaimExtraction claims an attempt's feedback extraction (409 when it is
// not this worker's to run).
func (c *Client) ClaimExtraction(ctx context.Context, modelID string, attempt int) (*ExtractionClaim, error) {
	var out ExtractionClaim
	err := c.post(ctx, "/api/v1/worker/extraction/"+url.PathEscape(modelID)+"/claim",
		map[string]any{"worker_id": c.WorkerID, "attempt": attempt}, &out)
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// ExtractionProgress renews the extraction lease.
func (c *Client) ExtractionProgress(ctx context.Context, modelID string, attempt, done int) error {
	return c.post(ctx, "/api/v1/worker/extraction/"+url.PathEscape(modelID)+"/progress",
		map[string]any{"worker_id": c.WorkerID, "attempt": attempt, "targets_done": done}, nil)
}

// RecordFindings reports one trace's findings.
func (c *Client) RecordFindings(ctx context.Context, modelID string, rec events.RewardModelFeedbackExtractedV1) error {
	rec.WorkerID = c.WorkerID
	return c.post(ctx, "/api/v1/worker/extraction/"+url.PathEscape(modelID)+"/findings", rec, nil)
}

// ExtractionFinished ends the extraction; a non-empty errMsg fails the model.
func (c *Client) ExtractionFinished(ctx context.Context, modelID string, attempt int, errMsg string) error {
	return c.post(ctx, "/api/v1/worker/extraction/"+url.PathEscape(modelID)+"/finished",
		map[string]any{"worker_id": c.WorkerID, "attempt": attempt, "error": errMsg}, nil)
}
