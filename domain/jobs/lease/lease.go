// Package lease is the one lease state machine of every leased worker job
// (training, feedback extraction, scoring, GEPA, evaluator candidates):
// requested (queued) → claimed by a worker for a lease → heartbeats →
// succeeded | failed | requeued (lease expired: a lost run; or handed
// back by a stopping worker). A job kind's aggregate embeds Lease and
// folds its own event types onto these transitions, so old logs fold to
// the same state; the deciders here (who holds it, when it expired, what
// an expiry leads to, the lost-run limit) are written once for all kinds.
//
// Pure: no I/O, no clock (now is an argument).
package lease

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
)

// Statuses of a leased job, the ones its owner sees.
const (
	Queued    = "queued"
	Running   = "running"
	Succeeded = "succeeded"
	Failed    = "failed"
)

// MaxLostRuns is how many runs of one job may lose their worker (lease
// expired: the worker crashed, was killed or lost its network) before the
// job fails; until then each one goes back to the queue by itself.
const MaxLostRuns = 3

// Job is a leased job's state as its stream tells it: its status, who
// holds its lease and until when, and the runs it lost.
type Job struct {
	Status   string
	WorkerID string
	// Lease is how long the claim lives without a heartbeat (0: recorded
	// before the kind had leases), LastBeat the claim or its latest
	// heartbeat, on the event store's clock.
	Lease    time.Duration
	LastBeat time.Time
	// Lost is one line per run of the current attempt whose lease expired,
	// oldest first.
	Lost []string
}

// Queue starts a new attempt: queued, no holder, no lost runs.
func (l *Job) Queue() { l.Status, l.WorkerID, l.Lost = Queued, "", nil }

// Claimed records a worker's claim at the event's time.
func (l *Job) Claimed(workerID string, leaseSeconds int, at time.Time) {
	l.Status, l.WorkerID, l.Lease, l.LastBeat = Running, workerID, time.Duration(leaseSeconds)*time.Second, at
}

// Beat records a heartbeat (or any report that proves the holder lives).
func (l *Job) Beat(at time.Time) { l.LastBeat = at }

// Requeued puts the job back in the queue; an expired lease is a lost run.
func (l *Job) Requeued(reason, detail string) {
	l.Status, l.WorkerID = Queued, ""
	if reason == events.RequeueLeaseExpired {
		l.Lost = append(l.Lost, detail)
	}
}

// HeldBy reports whether workerID holds the running job.
func (l Job) HeldBy(workerID string) bool { return l.Status == Running && l.WorkerID == workerID }

// NotClaimable is the conflict a claim or report of a job that is not the
// worker's gets (a duplicate or stale delivery, a lost lease): 409
// not_claimable, which a worker acknowledges and skips.
func NotClaimable(format string, args ...any) error {
	return &domain.ConflictError{Code: "not_claimable", Message: fmt.Sprintf(format, args...)}
}

// HandBackDetail is the one line a hand-back records: the worker's reason,
// or that it stopped. A hand-back is no failure and no lost run.
func HandBackDetail(workerID, reason string) string {
	return FirstLine(cmp.Or(reason, "worker "+workerID+" stopped"), 500)
}

// Rules is how a kind words its lease expiries; the rule itself is Expire.
type Rules struct {
	// Silence says what the worker failed to do, with the lease and the
	// time of its last sign of life: "sent no heartbeat for %s (last at %s)".
	Silence string
	// Job is the failure's subject ("training failed"), Lapse what happened
	// each time ("lease expired"), Remedy what its owner does next.
	Job, Lapse, Remedy string
}

// Expiry is what an expired lease leads to: a requeue with Detail (the
// lost run, LostRuns counting it) or, at the MaxLostRuns-th lost run, a
// failure with Fail as its error.
type Expiry struct {
	Detail   string
	LostRuns int
	Fail     string
}

// Expire is the sweep rule: a running job whose holder sent no sign of life
// for its lease (ok false while the lease runs or the job is not running) goes back to the queue, or fails once MaxLostRuns runs
// were lost, with a message whose first line says so and whose next lines
// list each lost run. A kind whose old claims recorded no lease sets one
// before asking.
func (r Rules) Expire(l Job, now time.Time) (out Expiry, ok bool) {
	if l.Status != Running || now.Sub(l.LastBeat) < l.Lease {
		return out, false
	}
	out.Detail = "worker " + l.WorkerID + " " + fmt.Sprintf(r.Silence, l.Lease, l.LastBeat.UTC().Format(time.RFC3339)) +
		": it stopped, crashed or lost its connection"
	lost := append(slices.Clone(l.Lost), out.Detail)
	out.LostRuns = len(lost)
	if len(lost) < MaxLostRuns {
		return out, true
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: the worker was lost %d times (%s each time); %s", r.Job, len(lost), r.Lapse, r.Remedy)
	for i, d := range lost {
		fmt.Fprintf(&b, "\nrun %d: %s", i+1, d)
	}
	out.Fail = FitError(b.String())
	return out, true
}

// MaxErrorChars is how much of a worker log a failure keeps (spec 002).
const MaxErrorChars = 2000

// FitError shapes a failure message to at most MaxErrorChars characters the
// way a reader wants it: the first line (what happened) is kept, then as
// much of the end of the rest (the log) as fits, starting at a line
// boundary, so no line is shown cut at its start. A message that already
// fits is returned as it is.
func FitError(msg string) string {
	r := []rune(msg)
	if len(r) <= MaxErrorChars {
		return msg
	}
	head, rest, _ := strings.Cut(msg, "\n")
	head = FirstLine(head, MaxErrorChars/4)
	const marker = "…\n"
	room := MaxErrorChars - len([]rune(head)) - 1 - len([]rune(marker))
	tail := []rune(rest)
	if len(tail) > room {
		tail = tail[len(tail)-room:]
		t := string(tail)
		if i := strings.IndexByte(t, '\n'); i >= 0 && i+1 < len(t) {
			t = t[i+1:] // start at the next whole line
		}
		return head + "\n" + marker + t
	}
	return head + "\n" + string(tail)
}

// FirstLine is s's first line, at most n characters.
func FirstLine(s string, n int) string {
	s, _, _ = strings.Cut(s, "\n")
	if r := []rune(s); len(r) > n {
		s = string(r[:n-1]) + "…"
	}
	return s
}
