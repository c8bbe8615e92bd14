// Package metrics is Critic's Prometheus instrumentation: one registry per
// process holding every family an operator scrapes from /metrics (HTTP,
// relay, projections, jobs, worker throughput, LLM calls, DuckDB), built on
// the official Go client. The code it measures does not import it: relay,
// projections, the worker service and the worker define small observer
// interfaces, and cmd/critic hands them this package's implementations, so a
// process without metrics (or a test) passes nothing and pays nothing.
//
// Label values are bounded by construction: route patterns (never raw
// paths), projection names, job kinds, outcomes, model providers from a
// fixed set. No trace, owner, model or request id, and no string a tenant
// chose (GEPA runs name their own models), is ever a label.
package metrics

import (
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Namespace prefixes every family.
const Namespace = "critic"

// Metrics is one process's registry and the families in it.
type Metrics struct {
	reg *prometheus.Registry

	httpRequests *prometheus.CounterVec
	httpDuration *prometheus.HistogramVec
	httpInFlight prometheus.Gauge

	relayEvents  prometheus.Counter
	relayBatches *prometheus.CounterVec
	relayLastSeq prometheus.Gauge

	projEvents   *prometheus.CounterVec
	projBatch    *prometheus.HistogramVec
	projDuration *prometheus.HistogramVec
	projErrors   *prometheus.CounterVec
	projPosition *prometheus.GaugeVec
	posMu        sync.Mutex
	positions    map[string]int64
	srcMu        sync.Mutex // guards srcErrs
	srcErrs      *prometheus.CounterVec

	jobClaims     *prometheus.CounterVec
	jobReports    *prometheus.CounterVec
	leaseExpiries *prometheus.CounterVec
	tracesErased  *prometheus.CounterVec

	backgroundBatches prometheus.Counter
	backgroundTraces  *prometheus.CounterVec

	workerJobs        *prometheus.HistogramVec
	workerTokensRate  prometheus.Gauge
	workerTrainSteps  prometheus.Counter
	workerScored      prometheus.Counter
	workerScoringRate prometheus.Gauge

	llmCalls    *prometheus.CounterVec
	llmDuration *prometheus.HistogramVec
	llmTokens   *prometheus.CounterVec

	queryDuration *prometheus.HistogramVec

	names *[]string // every critic_ family registered, for FamilyNames
}

// New returns a registry with the Go runtime and process collectors and every
// Critic family registered.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), positions: map[string]int64{}, names: new([]string)}
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	f := m.factory()

	m.httpRequests = f.counterVec("http_requests_total", "HTTP requests answered, by route pattern and status code.", "route", "code")
	m.httpDuration = f.histogramVec("http_request_duration_seconds", "Time to answer an HTTP request, by route pattern.",
		[]float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}, "route")
	m.httpInFlight = f.gauge("http_requests_in_flight", "HTTP requests being answered now.")

	m.relayEvents = f.counter("relay_published_events_total", "Events the relay published to critic.events.")
	m.relayBatches = f.counterVec("relay_publish_batches_total", "Publish calls of the relay, by outcome (ok, error).", "outcome")
	m.relayLastSeq = f.gauge("relay_published_seq", "Sequence number of the last event this process's relay published (0 on a stand-by instance).")

	m.projEvents = f.counterVec("projection_events_total", "Events delivered to a projection in batches it applied.", "projection")
	m.projBatch = f.histogramVec("projection_batch_events", "Events per projection batch (one transaction).",
		[]float64{1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2000}, "projection")
	m.projDuration = f.histogramVec("projection_batch_duration_seconds", "Time a projection took to apply one batch.",
		[]float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}, "projection")
	m.projErrors = f.counterVec("projection_batch_errors_total", "Batches a projection failed to apply (the bus redelivers them).", "projection")
	m.projPosition = f.gaugeVec("projection_position_seq", "Highest event sequence number a projection applied in this process.", "projection")

	m.jobClaims = f.counterVec("job_claims_total", "Job claims workers made, by kind and outcome (claimed, refused).", "kind", "outcome")
	m.jobReports = f.counterVec("job_reports_total", "Job results workers reported, by kind and outcome (succeeded, failed, rejected).", "kind", "outcome")
	m.leaseExpiries = f.counterVec("job_lease_expiries_total", "Jobs failed because their worker stopped heartbeating or never finished.", "kind")
	m.tracesErased = f.counterVec("traces_erased_total", "Traces this process erased (crypto-shredded), by reason: deleted, retention, account.", "reason")

	m.backgroundBatches = f.counter("background_scoring_batches_total", "Background scoring batches requested (spec 001: up to eight traces each).")
	m.backgroundTraces = f.counterVec("background_scoring_traces_total",
		"Traces of background scoring, by outcome: requested (in a batch), scored, failed (an automatic attempt).", "outcome")

	m.workerJobs = f.histogramVec("worker_job_duration_seconds", "Wall time of a job on a worker, from claim to report, by kind and outcome.",
		[]float64{.1, .5, 1, 5, 10, 30, 60, 300, 600, 1800, 3600, 7200, 21600}, "kind", "outcome")
	m.workerTokensRate = f.gauge("worker_train_tokens_per_second", "Training throughput of the latest optimizer step.")
	m.workerTrainSteps = f.counter("worker_train_steps_total", "Optimizer steps the worker ran.")
	m.workerScored = f.counter("worker_scored_sequences_total", "Sequences (actions) the worker scored on request.")
	m.workerScoringRate = f.gauge("worker_scoring_sequences_per_second", "Scoring throughput of the latest scoring job.")

	m.llmCalls = f.counterVec("llm_requests_total", "Model-provider calls, by provider, role and outcome (ok, error).", "provider", "role", "outcome")
	m.llmDuration = f.histogramVec("llm_request_duration_seconds", "Latency of model-provider calls, by provider and role.",
		[]float64{.1, .25, .5, 1, 2.5, 5, 10, 20, 40, 80, 160}, "provider", "role")
	m.llmTokens = f.counterVec("llm_tokens_total", "Tokens spent on model-provider calls, by provider, role and direction (prompt, completion).", "provider", "role", "direction")

	m.queryDuration = f.histogramVec("query_duration_seconds", "Time to answer POST /query in DuckDB, by outcome (ok, rejected, error).",
		[]float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}, "outcome")
	return m
}

// Registry is where extra collectors (scrape-time gauges) register.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus text (or OpenMetrics) format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg, EnableOpenMetrics: true})
}

// HTTPStarted counts a request in flight; call the returned func when it ends.
func (m *Metrics) HTTPStarted() func() {
	m.httpInFlight.Inc()
	return m.httpInFlight.Dec
}

// HTTPDone records one answered request. route must be a route pattern (or a
// fixed placeholder such as "unmatched"), never the request path.
func (m *Metrics) HTTPDone(route string, code int, elapsed time.Duration) {
	m.httpRequests.WithLabelValues(route, strconv.Itoa(code)).Inc()
	m.httpDuration.WithLabelValues(route).Observe(elapsed.Seconds())
}

// RelayPublished records one publish call of n events ending at lastSeq.
func (m *Metrics) RelayPublished(n int, lastSeq int64, err error) {
	if err != nil {
		m.relayBatches.WithLabelValues("error").Inc()
		return
	}
	m.relayBatches.WithLabelValues("ok").Inc()
	m.relayEvents.Add(float64(n))
	m.relayLastSeq.Set(float64(lastSeq))
}

// ProjectionBatch records one batch a projection applied (or failed to).
func (m *Metrics) ProjectionBatch(projection string, n int, maxSeq int64, elapsed time.Duration, err error) {
	m.projDuration.WithLabelValues(projection).Observe(elapsed.Seconds())
	if err != nil {
		m.projErrors.WithLabelValues(projection).Inc()
		return
	}
	m.projBatch.WithLabelValues(projection).Observe(float64(n))
	m.projEvents.WithLabelValues(projection).Add(float64(n))
	// Partitions deliver independently: keep the highest seen.
	m.posMu.Lock()
	if maxSeq > m.positions[projection] {
		m.positions[projection] = maxSeq
		m.projPosition.WithLabelValues(projection).Set(float64(maxSeq))
	}
	m.posMu.Unlock()
}

// ProjectionPosition returns the highest seq projection applied in this
// process and whether it applied any batch yet.
func (m *Metrics) ProjectionPosition(projection string) (int64, bool) {
	m.posMu.Lock()
	defer m.posMu.Unlock()
	p, ok := m.positions[projection]
	return p, ok
}

// Projections lists the projections that applied a batch in this process.
func (m *Metrics) Projections() []string {
	m.posMu.Lock()
	defer m.posMu.Unlock()
	return slices.Collect(maps.Keys(m.positions))
}

// JobClaimed records a claim; refused says the claim was not granted.
func (m *Metrics) JobClaimed(kind string, refused bool) {
	outcome := "claimed"
	if refused {
		outcome = "refused"
	}
	m.jobClaims.WithLabelValues(kind, outcome).Inc()
}

// JobReported records a worker's result report as the API accepted it
// (succeeded, failed) or refused it (rejected).
func (m *Metrics) JobReported(kind, outcome string) {
	m.jobReports.WithLabelValues(kind, outcome).Inc()
}

// LeaseExpired records a job failed by the lease sweeper.
func (m *Metrics) LeaseExpired(kind string) { m.leaseExpiries.WithLabelValues(kind).Inc() }

// TraceErased records a trace this process erased; reason is deleted,
// retention or account.
func (m *Metrics) TraceErased(reason string) { m.tracesErased.WithLabelValues(reason).Inc() }

// BackgroundBatch records a background scoring batch of traces traces.
func (m *Metrics) BackgroundBatch(traces int) {
	m.backgroundBatches.Inc()
	m.backgroundTraces.WithLabelValues("requested").Add(float64(traces))
}

// BackgroundOutcome records an automatic scoring run that ended: "scored"
// or "failed".
func (m *Metrics) BackgroundOutcome(outcome string) {
	m.backgroundTraces.WithLabelValues(outcome).Inc()
}

// WorkerJobDone records a job's wall time on the worker.
func (m *Metrics) WorkerJobDone(kind, outcome string, elapsed time.Duration) {
	m.workerJobs.WithLabelValues(kind, outcome).Observe(elapsed.Seconds())
}

// WorkerTrainStep records one optimizer step's throughput.
func (m *Metrics) WorkerTrainStep(tokensPerSec float64) {
	m.workerTrainSteps.Inc()
	m.workerTokensRate.Set(tokensPerSec)
}

// WorkerScored records a scoring job of n sequences that took elapsed.
func (m *Metrics) WorkerScored(n int, elapsed time.Duration) {
	m.workerScored.Add(float64(n))
	if s := elapsed.Seconds(); s > 0 {
		m.workerScoringRate.Set(float64(n) / s)
	}
}

// LLMCall records one model-provider call. model is the LiteLLM model
// string ("openai/gpt-4.1-mini"); only its provider becomes a label
// (providerLabel), because the model of a GEPA run is the tenant's choice and
// /metrics is unauthenticated: a name there would leak one tenant's string to
// anyone and let tenants grow the series without bound. role is the server
// role (feedback, fast, step_label, gepa_task, gepa_reflection); the model
// of each configured role is in the operator's own configuration.
func (m *Metrics) LLMCall(model, role string, elapsed time.Duration, promptTokens, completionTokens int, err error) {
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	provider := providerLabel(model)
	m.llmCalls.WithLabelValues(provider, role, outcome).Inc()
	m.llmDuration.WithLabelValues(provider, role).Observe(elapsed.Seconds())
	if promptTokens > 0 {
		m.llmTokens.WithLabelValues(provider, role, "prompt").Add(float64(promptTokens))
	}
	if completionTokens > 0 {
		m.llmTokens.WithLabelValues(provider, role, "completion").Add(float64(completionTokens))
	}
}

// providerLabel maps a model string to a fixed set: "openai", "anthropic" or
// "other".
func providerLabel(model string) string {
	provider, _, _ := strings.Cut(model, "/")
	switch provider {
	case "openai", "anthropic":
		return provider
	}
	return "other"
}

// QueryDone records one POST /query; outcome is ok, rejected (the user's SQL
// was refused or failed) or error.
func (m *Metrics) QueryDone(outcome string, elapsed time.Duration) {
	m.queryDuration.WithLabelValues(outcome).Observe(elapsed.Seconds())
}

// FamilyNames lists every critic_ family registered so far, with or without
// samples (a counter vector shows no series before its first increment), so
// a test can check that the dashboard only queries families that exist.
func (m *Metrics) FamilyNames() []string {
	m.posMu.Lock()
	defer m.posMu.Unlock()
	return append([]string(nil), (*m.names)...)
}

func (m *Metrics) factory() factory { return factory{reg: m.reg, names: m.names, mu: &m.posMu} }

// factory registers families under the namespace.
type factory struct {
	reg   prometheus.Registerer
	names *[]string
	mu    *sync.Mutex
}

func (f factory) named(name string) {
	f.mu.Lock()
	*f.names = append(*f.names, Namespace+"_"+name)
	f.mu.Unlock()
}

// register records c's name and registers it: the one step every
// constructor below shares.
func register[C prometheus.Collector](f factory, name string, c C) C {
	f.named(name)
	f.reg.MustRegister(c)
	return c
}

func (f factory) counter(name, help string) prometheus.Counter {
	return register(f, name, prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help}))
}

func (f factory) counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return register(f, name, prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help}, labels))
}

func (f factory) gauge(name, help string) prometheus.Gauge {
	return register(f, name, prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace, Name: name, Help: help}))
}

func (f factory) gaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	return register(f, name, prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: name, Help: help}, labels))
}

func (f factory) histogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	return register(f, name, prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: name, Help: help, Buckets: buckets}, labels))
}
