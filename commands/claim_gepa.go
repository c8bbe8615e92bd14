package commands

import (
	"context"
	"time"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/rewardmodels"
)

// ClaimGepa starts a queued run for one worker; a duplicate delivery loses
// at the status check or the version check.
type ClaimGepa struct {
	WorkerID string
	RunID    string
	Lease    time.Duration
}

// ClaimGepaHandler runs ClaimGepa.
type ClaimGepaHandler struct{ *Streams }

// Handle runs the command.
func (c ClaimGepaHandler) Handle(ctx context.Context, cmd ClaimGepa) (jobs.GepaClaim, error) {
	st, err := c.loadGepa(ctx, cmd.RunID)
	if err != nil {
		return jobs.GepaClaim{}, err
	}
	if st.Status != rewardmodels.RunQueued {
		return jobs.GepaClaim{}, &domain.ConflictError{Code: "not_claimable", Message: "GEPA run " + cmd.RunID + " is not queued (status " + st.Status + ")"}
	}
	p := events.GepaRunStartedV1{RunID: cmd.RunID, WorkerID: cmd.WorkerID, LeaseSeconds: int(cmd.Lease / time.Second)}
	if _, err := c.appendToGepa(ctx, workerActor(cmd.WorkerID), st, events.GepaRunStarted, p); err != nil {
		return jobs.GepaClaim{}, err
	}
	rq := st.Requested
	var key string
	if rq.TaskAPIKeySealed != "" {
		if key, err = c.open(rq.TaskAPIKeySealed); err != nil {
			return jobs.GepaClaim{}, &domain.ConflictError{Code: "not_claimable", Message: "GEPA run " + cmd.RunID + ": task_api_key: " + err.Error()}
		}
	}
	return jobs.GepaClaim{RunID: cmd.RunID, OwnerID: st.OwnerID, LeaseSeconds: p.LeaseSeconds, Job: jobs.GepaJobSpec{Kind: "gepa",
		RewardModelKey: rq.ArtifactKey, TaskModel: rq.TaskModel, TaskAPIBase: rq.TaskAPIBase, TaskAPIKey: key, ReflectionModel: rq.ReflectionModel,
		MaxMetricCalls: rq.MaxMetricCalls, ExamplesKey: rq.ExamplesKey, InputVersion: rq.InputVersion}}, nil
}
