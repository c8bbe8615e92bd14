package jobs

import (
	"encoding/json"
	"net/url"
	"slices"

	"github.com/criticml/critic/domain/events"
)

// Kind names a kind of worker job. Every kind is one leased job to the
// worker service: a worker claims it, renews its lease (beat), reports
// partial results as it goes (report), and finishes, fails or hands it
// back, all on one route (RouteJob). What differs between kinds is only
// the job's message (what its topic carries), the claim's answer (what the
// worker works on), and the payloads of its reports and result.
type Kind string

// registered is every kind with its topic, in the order the kinds' files
// declare them (each file of this package that defines a kind registers
// it: `var KindX = register("x", TopicX)`), so a new kind is one file here.
var registered []registration

type registration struct {
	kind  Kind
	topic string
}

// register declares a kind of worker job whose jobs are published on topic
// ("" for a kind a worker reports on within another kind's job, such as
// quality checks within label jobs).
func register(name, topic string) Kind {
	if slices.ContainsFunc(registered, func(r registration) bool { return r.kind == Kind(name) }) {
		panic("jobs: kind " + name + " registered twice")
	}
	registered = append(registered, registration{Kind(name), topic})
	return Kind(name)
}

// Kinds is every kind of worker job: the worker service serves exactly
// these, and the worker runs each.
func Kinds() []Kind {
	out := make([]Kind, len(registered))
	for i, r := range registered {
		out[i] = r.kind
	}
	return out
}

// TopicOf is the topic k's jobs are published on ("" for none).
func TopicOf(k Kind) string {
	if i := slices.IndexFunc(registered, func(r registration) bool { return r.kind == k }); i >= 0 {
		return registered[i].topic
	}
	return ""
}

// The actions on one job (the {action} of RouteJob).
const (
	// Claim takes the job (409 not_claimable: a duplicate or stale
	// delivery, or another worker holds it) and answers what to work on.
	Claim = "claim"
	// Beat renews the lease, with the kind's progress as the body.
	Beat = "beat"
	// Report records a partial result (findings, a GEPA candidate, a batch
	// of labels, an assessment) while the job runs.
	Report = "report"
	// Finish records the result; the kind's domain decision turns it into
	// its events.
	Finish = "finish"
	// Fail ends the job with the end of its log as the error.
	Fail = "fail"
	// HandBack returns the job to the queue (the worker is stopping); the
	// next free worker takes it. A hand-back is no failure and no lost run.
	HandBack = "handback"
)

// RouteJob is the one worker-service route about a job, relative to
// ServicePrefix; JobPath builds its URLs.
const RouteJob = "POST /jobs/{kind}/{id}/{action}"

// JobPath is the URL path of action on the job id of kind.
func JobPath(kind Kind, id, action string) string {
	return ServicePrefix + "/jobs/" + string(kind) + "/" + url.PathEscape(id) + "/" + action
}

// Call is the body of every RouteJob call: who calls, the job as its topic
// carried it (its attempt, revision or trace, which every answer of the
// API checks against the job's stream), and the action's payload.
type Call struct {
	WorkerID string          `json:"worker_id"`
	Job      json.RawMessage `json:"job"`
	// Body is the action's payload: the kind's progress (beat), a partial
	// result (report), the result (finish), or what failed (fail).
	Body json.RawMessage `json:"body,omitempty"`
	// Error is a failure's message (fail), Reason a hand-back's one line.
	Error  string `json:"error,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// Trigger is the job one log event asks for, if any, for a kind whose jobs
// follow from an event alone (a trace imported without a title asks for a
// title job). Kinds whose jobs need the command side first (a model's
// dataset, a scoring batch) are published by the dispatch projection
// itself.
type Trigger func(e events.Envelope) (Message, bool)

// triggers is every kind's trigger, each registered by the kind's own file
// (`var _ = triggeredBy(KindX, xJobOf)`).
var triggers []trigger

type trigger struct {
	kind Kind
	fn   Trigger
}

// triggeredBy registers kind's trigger.
func triggeredBy(kind Kind, fn Trigger) bool {
	triggers = append(triggers, trigger{kind, fn})
	return true
}

// Triggered is a job an event asks for: its kind and its message.
type Triggered struct {
	Kind Kind
	Job  Message
}

// TriggeredBy lists the jobs e asks for of the kinds on says this
// deployment runs.
func TriggeredBy(e events.Envelope, on func(Kind) bool) []Triggered {
	var out []Triggered
	for _, t := range triggers {
		if !on(t.kind) {
			continue
		}
		if job, ok := t.fn(e); ok {
			out = append(out, Triggered{t.kind, job})
		}
	}
	return out
}

// Message is a job message (what a kind's topic carries): it names its job.
type Message interface {
	// JobID is the id the job's calls are about; "" for a malformed message.
	JobID() string
}

// attempted is id when the attempt is a real one (from 1).
func attempted(id string, attempt int) string {
	if attempt < 1 {
		return ""
	}
	return id
}
