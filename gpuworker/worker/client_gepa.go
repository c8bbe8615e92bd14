package worker

import (
	"context"
	"encoding/json"
	"net/url"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
)

// ClaimGepa claims a queued GEPA run; 409 when it is not queued.
func (c *Client) ClaimGepa(ctx context.Context, runID string) (*jobs.GepaClaim, error) {
	var out jobs.GepaClaim
	if err := c.post(ctx, jobs.GepaPath(url.PathEscape(runID), "claim"), jobs.GepaRequest{WorkerID: c.WorkerID}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// GepaHeartbeat renews a GEPA lease; 409 means it is lost.
func (c *Client) GepaHeartbeat(ctx context.Context, runID string, p events.GepaProgress) error {
	return c.post(ctx, jobs.GepaPath(url.PathEscape(runID), "heartbeat"), jobs.GepaHeartbeat{GepaRequest: jobs.GepaRequest{WorkerID: c.WorkerID}, Progress: p}, nil)
}

// GepaCandidate records one evaluated proposal.
func (c *Client) GepaCandidate(ctx context.Context, runID string, cand events.GepaRunCandidateEvaluatedV1) error {
	return c.post(ctx, jobs.GepaPath(url.PathEscape(runID), "candidate"), jobs.GepaCandidate{GepaRequest: jobs.GepaRequest{WorkerID: c.WorkerID}, Candidate: cand}, nil)
}

// GepaSucceeded reports result.json.
func (c *Client) GepaSucceeded(ctx context.Context, runID string, result json.RawMessage) error {
	return c.post(ctx, jobs.GepaPath(url.PathEscape(runID), "succeeded"), jobs.GepaSucceeded{GepaRequest: jobs.GepaRequest{WorkerID: c.WorkerID}, Result: result}, nil)
}

// GepaFailed reports a failed run; msg is the end of the job's log.
func (c *Client) GepaFailed(ctx context.Context, runID, msg string) error {
	return c.post(ctx, jobs.GepaPath(url.PathEscape(runID), "failed"), jobs.GepaFailed{GepaRequest: jobs.GepaRequest{WorkerID: c.WorkerID}, Error: msg}, nil)
}

// GepaHandBack returns a running run to the queue (this worker is
// stopping); reason is one line.
func (c *Client) GepaHandBack(ctx context.Context, runID, reason string) error {
	return c.post(ctx, jobs.GepaPath(url.PathEscape(runID), "handback"), jobs.GepaHandBack{GepaRequest: jobs.GepaRequest{WorkerID: c.WorkerID}, Reason: reason}, nil)
}
