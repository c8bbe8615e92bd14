package worker

import (
	"context"
	"encoding/json"
	"github.com/criticml/critic/domain/events"

	"github.com/criticml/critic/domain/jobs"
)

// The calls the tests make by hand, as a worker's runner makes them: each
// is one Client.Job call on the one route.

func trainJob(modelID string, attempt int) jobs.Call {
	raw, _ := json.Marshal(jobs.TrainJob{ModelID: modelID, Attempt: attempt})
	return jobs.Call{Job: raw}
}

func (c *Client) ClaimTraining(ctx context.Context, modelID string, attempt int) (*jobs.TrainingClaim, error) {
	var out jobs.TrainingClaim
	if err := c.Job(ctx, jobs.KindTrain, modelID, jobs.Claim, trainJob(modelID, attempt), &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func (c *Client) Heartbeat(ctx context.Context, modelID string, attempt int, p events.Progress) error {
	call := trainJob(modelID, attempt)
	call.Body = raw(p)
	return c.Job(ctx, jobs.KindTrain, modelID, jobs.Beat, call, nil)
}

func (c *Client) TrainingSucceeded(ctx context.Context, modelID string, attempt int, s jobs.Succeeded) error {
	call := trainJob(modelID, attempt)
	call.Body = raw(s)
	return c.Job(ctx, jobs.KindTrain, modelID, jobs.Finish, call, nil)
}

func (c *Client) TrainingFailed(ctx context.Context, modelID string, attempt int, msg string) error {
	call := trainJob(modelID, attempt)
	call.Error = msg
	return c.Job(ctx, jobs.KindTrain, modelID, jobs.Fail, call, nil)
}

func scoreJob(runID, traceID, modelID string) jobs.Call {
	raw, _ := json.Marshal(jobs.ScoreJob{RunID: runID, TraceID: traceID, ModelID: modelID})
	return jobs.Call{Job: raw}
}

func (c *Client) ClaimScoring(ctx context.Context, runID, traceID, modelID string) (*jobs.ScoringClaim, error) {
	var out jobs.ScoringClaim
	if err := c.Job(ctx, jobs.KindScore, runID, jobs.Claim, scoreJob(runID, traceID, modelID), &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func (c *Client) ScoringFinished(ctx context.Context, runID, traceID, modelID string, f jobs.ScoringFinished, failure string) error {
	call := scoreJob(runID, traceID, modelID)
	if failure != "" {
		call.Error = failure
		return c.Job(ctx, jobs.KindScore, runID, jobs.Fail, call, nil)
	}
	call.Body = raw(f)
	return c.Job(ctx, jobs.KindScore, runID, jobs.Finish, call, nil)
}

func candidateJob(id string) jobs.Call {
	raw, _ := json.Marshal(jobs.EvaluatorTrainJob{CandidateID: id})
	return jobs.Call{Job: raw}
}

func (c *Client) ClaimCandidate(ctx context.Context, id string) (*jobs.EvaluatorCandidateClaim, error) {
	var out jobs.EvaluatorCandidateClaim
	if err := c.Job(ctx, jobs.KindEvaluatorTrain, id, jobs.Claim, candidateJob(id), &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func (c *Client) CandidateHeartbeat(ctx context.Context, id string) error {
	return c.Job(ctx, jobs.KindEvaluatorTrain, id, jobs.Beat, candidateJob(id), nil)
}

func (c *Client) CandidateFailed(ctx context.Context, id, msg string) error {
	call := candidateJob(id)
	call.Error = msg
	return c.Job(ctx, jobs.KindEvaluatorTrain, id, jobs.Fail, call, nil)
}

func (c *Client) ClaimExtraction(ctx context.Context, modelID string, attempt int) (*jobs.ExtractionClaim, error) {
	raw, _ := json.Marshal(jobs.ExtractJob{ModelID: modelID, Attempt: attempt})
	var out jobs.ExtractionClaim
	if err := c.Job(ctx, jobs.KindExtract, modelID, jobs.Claim, jobs.Call{Job: raw}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func (c *Client) ClaimGepa(ctx context.Context, runID string) (*jobs.GepaClaim, error) {
	raw, _ := json.Marshal(jobs.GepaJob{RunID: runID})
	var out jobs.GepaClaim
	if err := c.Job(ctx, jobs.KindGepa, runID, jobs.Claim, jobs.Call{Job: raw}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func (c *Client) GepaSucceeded(ctx context.Context, runID string, result json.RawMessage) error {
	raw, _ := json.Marshal(jobs.GepaJob{RunID: runID})
	return c.Job(ctx, jobs.KindGepa, runID, jobs.Finish, jobs.Call{Job: raw, Body: result}, nil)
}

// ClaimNextTraining is claimNextTraining without a presence report.
func (c *Client) ClaimNextTraining(ctx context.Context, compute string) (*jobs.TrainingClaim, error) {
	return c.claimNextTraining(ctx, compute, nil)
}

// HandleTrain claims and runs the attempt a critic.jobs.train message
// names (a duplicate or stale one is refused by the claim and skipped):
// one job driven by hand. Run does not use it: it pulls (RunTraining).
func (w *Worker) HandleTrain(ctx context.Context, payload []byte) bool {
	return training.handle(w)(ctx, payload)
}
