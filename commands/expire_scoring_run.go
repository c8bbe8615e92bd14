package commands

import (
	"context"
	"time"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs/lease"
	"github.com/criticml/critic/domain/rewardmodels"
)

// ExpireScoringRun handles a run that has been running longer than timeout
// at now (scoring runs have no heartbeat: timeout is their lease): it goes
// back to the queue for the next free worker, and the run whose worker is
// lost for the lease.MaxLostRuns-th time fails with a readable
// reason (first line what happened, then one line per lost run).
type ExpireScoringRun struct {
	TraceID   string
	ModelID   string
	RunID     string
	StartedAt time.Time
	Now       time.Time
	Timeout   time.Duration
}

// ExpireScoringRunHandler runs ExpireScoringRun.
type ExpireScoringRunHandler struct{ *Streams }

// Handle runs the command.
func (c ExpireScoringRunHandler) Handle(ctx context.Context, cmd ExpireScoringRun) (Result, error) {
	sc, _, owner, err := c.loadScoring(ctx, cmd.TraceID, cmd.ModelID)
	if err != nil {
		return Result{}, err
	}
	if sc.RunID != cmd.RunID || sc.Status != rewardmodels.RunRunning || cmd.Now.Sub(cmd.StartedAt) < cmd.Timeout {
		return Result{}, nil
	}
	held := sc.Job
	held.Lease, held.LastBeat = cmd.Timeout, cmd.StartedAt
	x, _ := lease.Rules{Silence: "did not finish within %s (started %s)", Job: "scoring failed",
		Lapse: "no result within " + cmd.Timeout.String(), Remedy: "request scoring again once the workers are healthy"}.Expire(held, cmd.Now)
	stream := events.ScoringStream(cmd.TraceID, cmd.ModelID)
	if x.Fail == "" {
		return c.append(ctx, Actor{}, map[string]int64{stream: sc.Version}, []events.New{{ID: newID(), Stream: stream, OwnerID: owner,
			Type: events.ScoringRunRequeued, Payload: events.ScoringRunRequeuedV1{RunID: cmd.RunID, TraceID: cmd.TraceID, ModelID: cmd.ModelID,
				WorkerID: sc.WorkerID, Reason: events.RequeueLeaseExpired, Detail: x.Detail}}})
	}
	return c.append(ctx, Actor{}, map[string]int64{stream: sc.Version}, []events.New{{ID: newID(), Stream: stream, OwnerID: owner,
		Type: events.ScoringRunFailed, Payload: events.ScoringRunFailedV1{RunID: cmd.RunID, TraceID: cmd.TraceID, ModelID: cmd.ModelID, Error: x.Fail, Automatic: sc.Automatic}}})
}
