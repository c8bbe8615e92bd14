package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/platform/requestid"
)

// Job is one claimed job as its kind's Work sees it, in the manner of
// river's Job[T]: Args is what the API's claim answered (what to work on),
// Log the job's logger (every line also kept for a failure report).
type Job[Args any] struct {
	ID   string
	Args Args
	Log  *slog.Logger

	w     *Worker
	kind  jobs.Kind
	msg   json.RawMessage
	tail  *LogTail
	beats *heartbeats
}

// Work is the one thing a kind of job writes: run the claimed job and
// return its result. A plain error fails the job (its failure report);
// Cancel ends it without a report; a job whose context ended is handed
// back (kinds with a lease) or left for redelivery (RetryLater).
type Work[Args, Result any] func(ctx context.Context, job *Job[Args]) (Result, error)

// Kind is how the runner runs one kind of job; each kind's file declares
// one, and its Work is all the kind itself does.
type Kind[Msg jobs.Message, Args, Result any] struct {
	Kind jobs.Kind
	// What names the job in log lines ("training job").
	What string
	// IDKey is the log attribute of the job's id ("model_id").
	IDKey string
	// Ready, when set, says whether this worker can run the kind at all; a
	// job it cannot run is acknowledged with its warning, unclaimed.
	Ready func(w *Worker) error
	// Claimed is what the "claimed" log line says of the claim.
	Claimed func(a Args) []any
	// Lease is the claim's lease in seconds (nil: the kind has none and
	// sends no heartbeats); BeatOnProgress sends a heartbeat as soon as
	// progress changes (at most every HeartbeatMinInterval) as well as
	// every third of the lease.
	Lease          func(a Args) int
	BeatOnProgress bool
	// Fail is what a failure report says (nil: the kind reports no
	// failure; the job's end is logged). Its body is the kind's details.
	Fail func(j *Job[Args], err error) (msg string, body any)
	// HandBack is whether a stopping worker hands the job back (else it
	// is left unacknowledged for redelivery); HandBackReason overrides the
	// one line it gives.
	HandBack       bool
	HandBackReason func(j *Job[Args]) string
	// NoFinish: the kind's result is recorded by its reports (labels,
	// assessments); the runner sends no finish.
	NoFinish bool
	// RefusedAs, when set, reports a claim the API refused for good (not a
	// duplicate) as the job's failure, with this headline: the owner sees
	// it (a label job's trace shows failed and retryable instead of queued
	// for ever).
	RefusedAs string
	// Consume is how a worker consumes the kind's topic (consume.go).
	Consume consumption
	Work    Work[Args, Result]
}

// consumption is how a worker consumes a kind's topic so that a busy
// worker never holds back a job a free worker could run (consume.go).
type consumption int

const (
	// releasing: one consumer, which leaves the topic's group once a job
	// has run ReleaseBusyAfter with another job waiting behind it and
	// another worker to take it (long jobs: minutes).
	releasing consumption = iota
	// short: Config.ShortJobs consumers at a time, each its own group
	// member (seconds: one slow model call does not stop the kind).
	short
	// labelSlots: Config.LabelJobs consumers, and none on a worker without
	// a step-label model.
	labelSlots
)

// topicKind is a registered kind as the consumer sees it.
type topicKind struct {
	consume consumption
	handle  func(*Worker) func(context.Context, []byte) bool
}

// byTopic is every kind a worker consumes, by its topic; each kind's file
// registers its own (`var x = register(Kind[...]{...})`), so a new kind is
// one file here. Training is pulled instead (Handle).
var byTopic = map[string]topicKind{}

// register makes k's topic (jobs.TopicOf) consumed by k's runner.
func register[Msg jobs.Message, Args, Result any](k Kind[Msg, Args, Result]) Kind[Msg, Args, Result] {
	topic := jobs.TopicOf(k.Kind)
	if _, dup := byTopic[topic]; dup || topic == "" {
		panic("worker: kind " + string(k.Kind) + " has no topic of its own or is registered twice")
	}
	byTopic[topic] = topicKind{consume: k.Consume, handle: k.handle}
	return k
}

// cancelled is Cancel's error.
type cancelled struct {
	err   error
	level slog.Level
}

func (c *cancelled) Error() string { return c.err.Error() }
func (c *cancelled) Unwrap() error { return c.err }

// Cancel ends a job without any report, logging err at level: nothing is
// left to do (a duplicate job, a stale revision, a source that changed) or
// the kind's outcome is to keep what exists (a title the model could not
// write).
func Cancel(level slog.Level, err error) error { return &cancelled{err: err, level: level} }

// retryLater is RetryLater's error.
type retryLater struct{ err error }

func (r *retryLater) Error() string { return r.err.Error() }
func (r *retryLater) Unwrap() error { return r.err }

// RetryLater leaves the job's message unacknowledged, so it is delivered
// again (to this or another worker) and its claim decides again.
func RetryLater(err error) error { return &retryLater{err: err} }

// Progress records the job's progress for its next heartbeat (and sends
// one soon when the kind beats on progress).
func (j *Job[Args]) Progress(p any) {
	if j.beats != nil {
		j.beats.set(p)
	}
}

// Report records a partial result (findings, a candidate, a batch of
// labels, an assessment), retried while the API is unreachable.
func (j *Job[Args]) Report(ctx context.Context, body, out any) error {
	return j.send(ctx, j.kind, "reporting a partial result", jobs.Report, jobs.Call{Body: raw(body)}, out)
}

// Beat renews the lease now with progress, retried while the API is
// unreachable (a kind that beats as it goes rather than on a timer).
func (j *Job[Args]) Beat(ctx context.Context, progress any) error {
	return j.send(ctx, j.kind, "reporting progress", jobs.Beat, jobs.Call{Body: raw(progress)}, nil)
}

// Call sends action about another kind of job that runs within this one
// (a label job's quality checks), retried while the API is unreachable.
func (j *Job[Args]) Call(ctx context.Context, kind jobs.Kind, action string, body, out any) error {
	return j.send(ctx, kind, "calling "+string(kind)+" "+action, action, jobs.Call{Body: raw(body)}, out)
}

// Tail is the end of the job's log, as a failure report carries it.
func (j *Job[Args]) Tail() string { return j.tail.String() }

// failWithError is a Kind's Fail that logs msg with the error and reports
// the error itself (cut to ErrorTailChars): a short job's log says no more.
func failWithError[Args any](msg string) func(j *Job[Args], err error) (string, any) {
	return func(j *Job[Args], err error) (string, any) {
		j.Log.Error(msg, "error", err)
		return truncate(err.Error(), ErrorTailChars), nil
	}
}

// failWithTail is a Kind's Fail that logs msg with the error and reports
// the end of the job's log (what its owner reads of a long job).
func failWithTail[Args any](msg string) func(j *Job[Args], err error) (string, any) {
	return func(j *Job[Args], err error) (string, any) {
		j.Log.Error(msg, "error", err)
		return j.Tail(), nil
	}
}

// send sends action about this job (or one of kind within it), retried
// while the API is unreachable; what names the call in log lines.
func (j *Job[Args]) send(ctx context.Context, kind jobs.Kind, what, action string, c jobs.Call, out any) error {
	c.Job = j.msg
	_, err := retry(ctx, j.w.cfg.ReportRetryFor, j.Log, what, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, j.w.client.Job(ctx, kind, j.ID, action, c, out)
	})
	return err
}

func raw(v any) json.RawMessage {
	if v == nil {
		return nil
	}
	if r, ok := v.(json.RawMessage); ok {
		return r
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("worker: a job payload must encode as JSON: %v", err))
	}
	return b
}

var errLeaseLost = errors.New("lease lost")

// handle is a kind's message handler for the consumers: it returns false
// only when ctx ended before the job finished (the message stays
// unacknowledged).
func (k Kind[Msg, Args, Result]) handle(w *Worker) func(context.Context, []byte) bool {
	return func(ctx context.Context, payload []byte) bool {
		var m Msg
		err := json.Unmarshal(payload, &m)
		if err != nil || !safeID(m.JobID()) {
			w.log.Error("dropping malformed "+string(k.Kind)+" message", "payload", truncate(string(payload), 300), "error", err)
			return true
		}
		return k.run(ctx, w, m.JobID(), payload, nil)
	}
}

// run claims the job (or takes the one claimed already: pulled kinds),
// runs Work under its lease, and reports the outcome.
func (k Kind[Msg, Args, Result]) run(ctx context.Context, w *Worker, id string, msg json.RawMessage, claimed *Args) bool {
	log, tail := jobLogger(w.log, withRequestID(ctx, "job", string(k.Kind), k.IDKey, id)...)
	j := &Job[Args]{ID: id, Log: log, w: w, kind: k.Kind, msg: msg, tail: tail}
	if k.Ready != nil {
		if err := k.Ready(w); err != nil {
			log.Warn(err.Error())
			return true
		}
	}
	ctx, endJob := w.cfg.Observer.JobStarted(ctx, string(k.Kind), requestid.From(ctx))
	outcome, jobErr := "failed", error(nil)
	defer func() { endJob(outcome, jobErr) }()
	if claimed != nil {
		j.Args = *claimed
	} else {
		args, err := retry(ctx, 0, log, "claiming the "+k.What, func(ctx context.Context) (Args, error) {
			// A claim the API has recorded must reach this worker even
			// when it is stopping meanwhile (it then hands the job back
			// at once instead of leaving it to the lease sweep): the
			// request is bounded, not cut by the shutdown.
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), claimWait)
			defer cancel()
			var a Args
			return a, w.client.Job(cctx, k.Kind, id, jobs.Claim, jobs.Call{Job: msg}, &a)
		})
		// A claim that did not succeed ends the job the same way for every
		// kind: a stopping worker leaves the message unacknowledged; a job
		// that is not claimable (a duplicate or stale delivery, or another
		// worker holds it) is skipped quietly; any other refusal is the
		// job's error.
		switch {
		case err == nil: // claimed, even by a worker stopping meanwhile (handed back below)
			j.Args = args
		case ctx.Err() != nil:
			outcome = "interrupted"
			return false
		case errors.Is(err, ErrNotClaimable):
			outcome = "refused"
			log.InfoContext(ctx, "skipping "+k.What+": not claimable (a duplicate or stale delivery)", "detail", err.Error())
			return true
		default:
			outcome, jobErr = "refused", err
			log.Error("skipping "+k.What+": claim refused", "error", err)
			if k.RefusedAs != "" {
				k.reportFailure(ctx, j, fmt.Errorf("%s: %w", k.RefusedAs, err))
			}
			return true
		}
	}
	var said []any
	if k.Claimed != nil {
		said = k.Claimed(j.Args)
	}
	log.Info("claimed "+k.What, said...)
	if ctx.Err() != nil { // stopped while the claim was answered
		outcome = "interrupted"
		return k.stopClaimed(ctx, j, &outcome)
	}

	jobCtx, cancelJob := context.WithCancelCause(ctx)
	defer cancelJob(nil)
	if k.Lease != nil {
		gap := time.Duration(0)
		if k.BeatOnProgress {
			gap = w.cfg.HeartbeatMinInterval
		}
		j.beats = startHeartbeats(jobCtx, j.beat, k.Lease(j.Args), gap, log, func() { cancelJob(errLeaseLost) })
		defer j.beats.stop()
	}
	res, err := k.Work(jobCtx, j)
	if err == nil && jobCtx.Err() != nil {
		err = context.Cause(jobCtx)
	}
	var cancel *cancelled
	var later *retryLater
	switch {
	case errors.Is(context.Cause(jobCtx), errLeaseLost):
		outcome = "lease_lost"
		log.Warn("lease lost: stopping the " + k.What + " without reporting")
		return true
	case errors.As(err, &cancel):
		outcome = "refused"
		log.Log(ctx, cancel.level, cancel.Error())
		return true
	case errors.As(err, &later):
		outcome, jobErr = "interrupted", err
		return false
	case err == nil && k.NoFinish:
		outcome = "succeeded"
		return true
	case err == nil:
		err = j.send(jobCtx, j.kind, "reporting the result", jobs.Finish, jobs.Call{Body: raw(res)}, nil)
		switch {
		case err == nil:
			outcome = "succeeded"
			log.Info(k.What + " succeeded")
			return true
		case errors.Is(err, ErrNotClaimable) || errors.Is(context.Cause(jobCtx), errLeaseLost):
			outcome, jobErr = "lease_lost", err
			log.Warn("the API refused the result: the lease was lost", "error", err)
			return true
		case ctx.Err() == nil:
			log.Error("the API rejected the result", "error", err)
			k.reportFailure(ctx, j, fmt.Errorf("the API rejected the success report: %w", err))
			outcome, jobErr = "failed", err
			return true
		}
	}
	jobErr = err
	if ctx.Err() != nil {
		outcome = "interrupted"
		return k.stopClaimed(ctx, j, &outcome)
	}
	k.reportFailure(ctx, j, err)
	return true
}

// claimWait bounds a claim request, which a stopping worker lets finish.
const claimWait = 10 * time.Second

// stopClaimed ends a claimed job of a stopping worker: a kind that hands
// back returns it to the queue now (the next free worker takes it at once);
// any other is left unacknowledged, redelivered, and the claim decides
// again. It returns false: the message is not acknowledged.
func (k Kind[Msg, Args, Result]) stopClaimed(ctx context.Context, j *Job[Args], outcome *string) bool {
	if !k.HandBack {
		return false
	}
	if j.beats != nil {
		j.beats.stop()
	}
	reason := "worker " + j.w.client.WorkerID + " is shutting down"
	if k.HandBackReason != nil {
		reason = k.HandBackReason(j)
	}
	j.Log.Warn("worker shutting down: handing the " + k.What + " back to the queue")
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := j.w.client.Job(hctx, k.Kind, j.ID, jobs.HandBack, jobs.Call{Job: j.msg, Reason: reason}, nil); err != nil {
		j.Log.Warn("could not hand the "+k.What+" back; the API requeues it when its lease expires", "error", err)
	} else {
		*outcome = "handed_back"
		j.Log.Info(k.What + " handed back: it is queued for the next free worker")
	}
	return false
}

// reportFailure sends the kind's failure report (or only logs the end of a
// kind that reports none).
func (k Kind[Msg, Args, Result]) reportFailure(ctx context.Context, j *Job[Args], err error) {
	if k.Fail == nil {
		j.Log.Warn(k.What+" failed", "error", err)
		return
	}
	msg, body := k.Fail(j, err)
	if err := j.send(ctx, j.kind, "reporting the failure", jobs.Fail, jobs.Call{Error: msg, Body: raw(body)}, nil); err != nil {
		j.Log.Error("could not report the failure; the lease will expire", "error", err)
	}
}

// beat renews the job's lease with its latest progress.
func (j *Job[Args]) beat(ctx context.Context, progress any) error {
	return j.w.client.Job(ctx, j.kind, j.ID, jobs.Beat, jobs.Call{Job: j.msg, Body: raw(progress)}, nil)
}

// heartbeats renews a lease every third of it, and — when minGap > 0 —
// as soon as the progress changes, at most once per minGap. A 409 calls
// lost (the job must stop); other errors are retried at the next beat.
type heartbeats struct {
	mu     sync.Mutex
	p      any
	kick   chan struct{}
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

func startHeartbeats(ctx context.Context, send func(context.Context, any) error, leaseSeconds int, minGap time.Duration,
	log *slog.Logger, lost func()) *heartbeats {
	if leaseSeconds <= 0 {
		leaseSeconds = 60
	}
	period := max(time.Duration(leaseSeconds)*time.Second/3, time.Second)
	ctx, cancel := context.WithCancel(ctx)
	h := &heartbeats{kick: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{})}
	if minGap <= 0 {
		h.kick = nil // a nil channel never fires: beats keep their period
	}
	go func() {
		defer close(h.done)
		timer := time.NewTimer(period)
		defer timer.Stop()
		var last time.Time
		for {
			select {
			case <-ctx.Done():
				return
			case <-timer.C:
			case <-h.kick:
				if wait := minGap - time.Since(last); wait > 0 && !sleep(ctx, wait) {
					return
				}
			}
			cctx, ccancel := context.WithTimeout(ctx, max(period, 10*time.Second))
			err := send(cctx, h.progress())
			ccancel()
			last = time.Now()
			timer.Reset(period) // since Go 1.23 this drops a tick already due
			switch {
			case err == nil:
			case errors.Is(err, ErrNotClaimable):
				log.Warn("heartbeat refused: the lease is lost", "error", err)
				lost()
				return
			case ctx.Err() != nil:
				return
			default:
				log.Warn("heartbeat failed; retrying", "error", err)
			}
		}
	}()
	return h
}

func (h *heartbeats) progress() any {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.p
}

func (h *heartbeats) set(p any) {
	h.mu.Lock()
	h.p = p
	h.mu.Unlock()
	if h.kick != nil {
		select {
		case h.kick <- struct{}{}:
		default:
		}
	}
}

func (h *heartbeats) stop() {
	h.once.Do(func() {
		h.cancel()
		<-h.done
	})
}

// readJSON reads the JSON blob at key (a job's dataset or inputs) into v;
// what names the blob in errors.
func (w *Worker) readJSON(ctx context.Context, what, key string, v any) error {
	raw, err := w.cfg.Blobs.Get(ctx, key)
	if err != nil {
		return fmt.Errorf("reading the %s %s: %w", what, key, err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("decoding the %s %s: %w", what, key, err)
	}
	return nil
}
