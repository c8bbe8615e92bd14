package commands

import (
	"context"
	"time"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/jobs"
)

// Job runs one worker call about a leased job (jobs.RouteJob): the kind's
// action on the job id, with the call's message and body decoded as the
// kind declares them. Every kind is the same lease to this handler — claim,
// beat, report, finish, fail, hand back — and contributes only its table
// (registered with onKind by the kind's own file): each action a typed
// function that loads the job's stream and appends what the kind's domain
// decision says (on finish, the result's events). lease is how long a
// claim lives without a heartbeat.
type Job struct {
	Kind   jobs.Kind
	ID     string
	Action string
	Call   jobs.Call
	Lease  time.Duration
}

// JobHandler runs Job.
type JobHandler struct{ *Streams }

// Handle runs the command.
func (c JobHandler) Handle(ctx context.Context, cmd Job) (any, error) {
	var fn func(context.Context, jobs.Call, string, time.Duration) (any, error)
	if table := jobTables[cmd.Kind]; table != nil {
		fn = table(c.Streams)[cmd.Action]
	}
	if fn == nil {
		return nil, domain.NotFound("worker-service action", string(cmd.Kind)+"/"+cmd.Action)
	}
	if cmd.Call.WorkerID == "" {
		return nil, &domain.ValidationError{Code: "invalid_request", Field: "worker_id", Message: "worker_id is required"}
	}
	return fn(ctx, cmd.Call, cmd.ID, cmd.Lease)
}
