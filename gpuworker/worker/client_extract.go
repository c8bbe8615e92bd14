package worker

import (
	"context"
	"net/url"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
)

// ExtractionClaim is the answer to an extraction claim (domain/jobs).
type ExtractionClaim = jobs.ExtractionClaim

// ClaimExtraction claims an attempt's feedback extraction (409 when it is
// not this worker's to run).
func (c *Client) ClaimExtraction(ctx context.Context, modelID string, attempt int) (*ExtractionClaim, error) {
	var out ExtractionClaim
	err := c.post(ctx, jobs.ExtractionPath(url.PathEscape(modelID), "claim"),
		jobs.AttemptRequest{WorkerID: c.WorkerID, Attempt: attempt}, &out)
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// ExtractionProgress renews the extraction lease.
func (c *Client) ExtractionProgress(ctx context.Context, modelID string, attempt, done int) error {
	return c.post(ctx, jobs.ExtractionPath(url.PathEscape(modelID), "progress"),
		jobs.ExtractionProgress{AttemptRequest: jobs.AttemptRequest{WorkerID: c.WorkerID, Attempt: attempt}, TargetsDone: done}, nil)
}

// RecordFindings reports one trace's findings.
func (c *Client) RecordFindings(ctx context.Context, modelID string, rec events.RewardModelFeedbackExtractedV1) error {
	return c.post(ctx, jobs.ExtractionPath(url.PathEscape(modelID), "findings"),
		jobs.ExtractionFindings{WorkerID: c.WorkerID, RewardModelFeedbackExtractedV1: rec}, nil)
}

// ExtractionFinished ends the extraction; a non-empty errMsg fails the model.
func (c *Client) ExtractionFinished(ctx context.Context, modelID string, attempt int, errMsg string) error {
	return c.post(ctx, jobs.ExtractionPath(url.PathEscape(modelID), "finished"),
		jobs.ExtractionFinished{AttemptRequest: jobs.AttemptRequest{WorkerID: c.WorkerID, Attempt: attempt}, Error: errMsg}, nil)
}

// ExtractionHandBack returns the extraction to the queue (this worker is
// stopping); its findings stay and the next worker continues it.
func (c *Client) ExtractionHandBack(ctx context.Context, modelID string, attempt int, reason string) error {
	return c.post(ctx, jobs.ExtractionPath(url.PathEscape(modelID), "handback"),
		jobs.ExtractionHandBack{AttemptRequest: jobs.AttemptRequest{WorkerID: c.WorkerID, Attempt: attempt}, Reason: reason}, nil)
}
