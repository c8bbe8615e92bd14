package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/evaluator"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/rewardmodels"
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

func (c JobHandler) Handle(ctx context.Context, cmd Job) (any, error) {
	var fn func(context.Context, jobs.Call, string, time.Duration) (any, error)
	if table := jobTables[cmd.Kind]; table != nil {
		fn = table(c.Streams)[cmd.Action]
	}
	if fn == nil {
		return nil, domain.NotFound("worker-service action", string(cmd.Kind)+"/"+cmd.Action)
	}
	if cmd.Call.WorkerID == "" {
		return nil, domain.InvalidField("worker_id", "worker_id is required")
	}
	return fn(ctx, cmd.Call, cmd.ID, cmd.Lease)
}

// jobActions is a kind's table: what each action it supports does. An
// action a kind lacks is a 404, like an unknown kind.
type jobActions map[string]func(ctx context.Context, c jobs.Call, id string, lease time.Duration) (any, error)

// jobTables is every kind's table, each registered by the kind's own file
// (`var _ = onKind(jobs.KindX, (*Streams).xJob)`).
var jobTables = map[jobs.Kind]func(*Streams) jobActions{}

// onKind registers kind's table; a kind registered twice is a programming
// error caught when the package loads.
func onKind(kind jobs.Kind, table func(*Streams) jobActions) bool {
	if _, dup := jobTables[kind]; dup {
		panic("commands: job kind " + string(kind) + " registered twice")
	}
	jobTables[kind] = table
	return true
}

// jobCall is one call as a kind's action sees it: the job's message
// decoded as M, the body as B.
type jobCall[M, B any] struct {
	Worker, ID string
	Job        M
	Body       B
	Error      string
	Reason     string
	Lease      time.Duration
}

// onJob makes a typed action: it decodes the job's message into M and the
// body into B (strictly: an unknown field is 422; an absent body is B's
// zero value) before fn runs.
func onJob[M, B any](fn func(ctx context.Context, c jobCall[M, B]) (any, error)) func(context.Context, jobs.Call, string, time.Duration) (any, error) {
	return func(ctx context.Context, raw jobs.Call, id string, lease time.Duration) (any, error) {
		c := jobCall[M, B]{Worker: raw.WorkerID, ID: id, Error: raw.Error, Reason: raw.Reason, Lease: lease}
		if err := strictField(raw.Job, &c.Job, "job"); err != nil {
			return nil, err
		}
		if err := strictField(raw.Body, &c.Body, "body"); err != nil {
			return nil, err
		}
		return fn(ctx, c)
	}
}

// strictField decodes a call's part (absent or null: nothing), refusing
// unknown fields, with the part named in the error.
func strictField(raw json.RawMessage, v any, field string) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return domain.InvalidField(field, "malformed "+field+": "+err.Error())
	}
	return nil
}

// jobAck is the answer to a report: ok when it was recorded.
func jobAck(_ Result, err error) (any, error) { return jobs.Ack{OK: err == nil}, err }

// noLog is what a failure records when the worker sent no log.
const noLog = "the worker reported a failure without a log"

// failureLog is a worker's failure log as an evaluator failure records it:
// its last 2,000 runes (the end of a log says why), or noLog when blank.
func failureLog(msg string) string {
	if strings.TrimSpace(msg) == "" {
		return noLog
	}
	if r := []rune(msg); len(r) > 2000 {
		return string(r[len(r)-2000:])
	}
	return msg
}

// decideOn is how a job's command runs: load the job's stream, decide the
// one event it leads to (typ "": nothing to append), and append it at the
// version read; a concurrent write (a heartbeat racing a report) makes it
// decide again on the new state.
func decideOn[S any](ctx context.Context, load func(context.Context) (S, error), write func(context.Context, Actor, S, string, any) (Result, error),
	actor Actor, decide func(S) (typ string, payload any, err error)) (Result, error) {
	return retryOnConflict(func() (Result, error) {
		s, err := load(ctx)
		if err != nil {
			return Result{}, err
		}
		typ, payload, err := decide(s)
		if err != nil || typ == "" {
			return Result{}, err
		}
		return write(ctx, actor, s, typ, payload)
	})
}

// onModel decides one event on a reward model's stream (training and
// feedback extraction).
func (c *Streams) onModel(ctx context.Context, modelID string, actor Actor, decide func(rewardmodels.State) (string, any, error)) (Result, error) {
	load := func(ctx context.Context) (rewardmodels.State, error) { return c.loadModel(ctx, "", modelID) }
	write := func(ctx context.Context, a Actor, st rewardmodels.State, typ string, p any) (Result, error) {
		return c.appendToModel(ctx, a, st, typ, p)
	}
	return decideOn(ctx, load, write, actor, decide)
}

// onGepa decides one event on a GEPA run's stream.
func (c *Streams) onGepa(ctx context.Context, runID string, actor Actor, decide func(rewardmodels.GepaState) (string, any, error)) (Result, error) {
	load := func(ctx context.Context) (rewardmodels.GepaState, error) { return c.loadGepa(ctx, runID) }
	return decideOn(ctx, load, c.appendToGepa, actor, decide)
}

// onEvaluator decides one event on the shared evaluator's stream.
func (c *Streams) onEvaluator(ctx context.Context, actor Actor, decide func(evaluator.State) (string, any, error)) (Result, error) {
	return decideOn(ctx, c.EvaluatorState, c.appendEvaluator, actor, decide)
}

// expiry is the event a lease expiry appends: the requeue while the job
// has runs left, else the failure (nil pointers: the lease runs).
func expiry[R, F any](requeueType string, requeue *R, failType string, fail *F) (string, any, error) {
	switch {
	case requeue != nil:
		return requeueType, *requeue, nil
	case fail != nil:
		return failType, *fail, nil
	}
	return "", nil, nil
}
