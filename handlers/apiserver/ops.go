package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/handlers/edge"
	"github.com/criticml/critic/platform/bus"
	"github.com/criticml/critic/platform/metrics"
	"github.com/criticml/critic/platform/relay"
	"github.com/criticml/critic/projections/readmodel"
)

// DefaultReadyMaxLag is how many unapplied events /readyz tolerates before it
// takes the instance out of rotation (CRITIC_READY_MAX_LAG).
const DefaultReadyMaxLag = 1000

// readyTimeout bounds the whole readiness probe.
const readyTimeout = 2 * time.Second

// metricsLagWindow bounds the read-model lag gauge (a bigger lag reads as
// this value: "at least").
const metricsLagWindow = 10_000

// readyCheck is one line of the /readyz body.
type readyCheck struct {
	OK     bool   `json:"ok"`
	Error  string `json:"error,omitempty"`
	Lag    *int64 `json:"lag,omitempty"`
	MaxLag int64  `json:"max_lag,omitempty"`
	// Applied and Needed (the snapshot check): the log position the query
	// snapshot has applied, and the log head when the instance started.
	Applied *int64 `json:"applied,omitempty"`
	Needed  *int64 `json:"needed,omitempty"`
}

// readyBody is what /readyz answers: 200 with status "ready", or 503 with
// status "not_ready" and the failing checks, so a person curling it sees why.
type readyBody struct {
	Status string                `json:"status"`
	Checks map[string]readyCheck `json:"checks"`
}

// readyz reports whether this instance should receive traffic: the database
// answers, a broker answers, the query process (when the snapshots run in
// one) is up, and the read model it serves is at most maxLag events behind
// the log (reads would be stale and read-your-writes would time
// out otherwise). /healthz stays the liveness check: a lagging instance is
// alive and must not be restarted for it.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	body := s.readiness(r.Context())
	status := http.StatusOK
	if body.Status != "ready" {
		status = http.StatusServiceUnavailable
	}
	edge.WriteJSON(w, status, body)
}

// Ready returns nil when the instance is ready (see readyz), else an error
// naming the failing checks: the verdict gRPC health reports too.
func (s *Server) Ready(ctx context.Context) error {
	body := s.readiness(ctx)
	if body.Status == "ready" {
		return nil
	}
	var errs []error
	for name, c := range body.Checks {
		if !c.OK {
			errs = append(errs, fmt.Errorf("%s: %s", name, c.Error))
		}
	}
	return errors.Join(errs...)
}

func (s *Server) readiness(ctx context.Context) readyBody {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	maxLag := s.readyMaxLag
	body := readyBody{Status: "ready", Checks: map[string]readyCheck{}}
	fail := func(name string, c readyCheck) {
		body.Status = "not_ready"
		body.Checks[name] = c
	}
	if err := s.pool.Ping(ctx); err != nil {
		fail("database", readyCheck{Error: "PostgreSQL does not answer: " + errText(err)})
	} else {
		body.Checks["database"] = readyCheck{OK: true}
		lag, err := readmodel.Lag(ctx, s.pool, maxLag+1)
		switch {
		case err != nil:
			fail("readmodel", readyCheck{Error: "reading the projection's lag: " + errText(err), MaxLag: maxLag})
		case lag > maxLag:
			fail("readmodel", readyCheck{Error: "the read-model projection is behind the event log", Lag: &lag, MaxLag: maxLag})
		default:
			body.Checks["readmodel"] = readyCheck{OK: true, Lag: &lag, MaxLag: maxLag}
		}
	}
	if s.snapPos != nil {
		s.snapshotReadiness(ctx, maxLag, fail, &body)
	}
	if s.queryProc != nil {
		if err := s.queryProc.Down(); err != nil {
			fail("query_process", readyCheck{Error: err.Error()})
		} else {
			body.Checks["query_process"] = readyCheck{OK: true}
		}
	}
	if err := bus.Ping(ctx, s.Brokers); err != nil {
		fail("broker", readyCheck{Error: "no Kafka broker answers: " + errText(err)})
	} else {
		body.Checks["broker"] = readyCheck{OK: true}
	}
	return body
}

// snapshotReadiness is the "snapshot" check: the instance's query snapshot
// has applied the log as of the instance's start (before, POST /query
// answers snapshot_catching_up) and trails the log head by at most maxLag.
func (s *Server) snapshotReadiness(ctx context.Context, maxLag int64, fail func(string, readyCheck), body *readyBody) {
	applied, needed := s.snapPos.Applied(), s.snapStart
	c := readyCheck{Applied: &applied, Needed: &needed, MaxLag: maxLag}
	if applied < needed {
		c.Error = fmt.Sprintf("the query snapshot is catching up with the event log: applied up to position %d of the %d "+
			"the instance started at; POST /query answers 503 snapshot_catching_up until then", applied, needed)
		fail("snapshot", c)
		return
	}
	head, err := s.store.Head(ctx)
	if err != nil {
		c.Error = "reading the event log head: " + errText(err)
		fail("snapshot", c)
		return
	}
	lag := max(head-applied, 0)
	c.Lag = &lag
	if lag > maxLag {
		c.Error = "the query snapshot is behind the event log"
		fail("snapshot", c)
		return
	}
	c.OK = true
	body.Checks["snapshot"] = c
}

// errText keeps probe errors short and free of credentials: a context
// deadline reads as a timeout, a network error as its operation.
func errText(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return "timed out"
	}
	if ne, ok := errors.AsType[*net.OpError](err); ok {
		return ne.Op + " " + ne.Net + ": " + ne.Err.Error()
	}
	if una, ok := errors.AsType[*domain.UnavailableError](err); ok {
		return una.Error()
	}
	return err.Error()
}

// gauges are the scrape-time gauges of an API instance: the event log, the
// relay, the read model, the job queue, the projections this process runs,
// and the parked events when a source is wired.
func (s *Server) gauges(m *metrics.Metrics, parked func(context.Context) (map[string]int64, error)) []metrics.GaugeSource {
	srcs := []metrics.GaugeSource{
		{Name: "event_log_head_seq", Help: "Sequence number of the newest event in the event store.",
			Read: func(ctx context.Context) ([]metrics.Sample, error) {
				h, err := s.store.Head(ctx)
				return metrics.Value(float64(h)), err
			}},
		{Name: "relay_cursor_seq", Help: "Sequence number up to which the relay has published (from relay_cursor).",
			Read: func(ctx context.Context) ([]metrics.Sample, error) {
				var seq int64
				err := s.pool.QueryRow(ctx, `SELECT COALESCE((SELECT seq FROM relay_cursor WHERE name = $1), 0)`, relayName).Scan(&seq)
				return metrics.Value(float64(seq)), err
			}},
		{Name: "relay_lag_events", Help: "Events stored but not yet published to Kafka.",
			Read: func(ctx context.Context) ([]metrics.Sample, error) {
				n, err := relay.Lag(ctx, s.pool, relayName)
				return metrics.Value(float64(n)), err
			}},
		{Name: "readmodel_lag_events", Help: "Events among the newest 10000 that the Postgres read model has not applied (what /readyz checks).",
			Read: func(ctx context.Context) ([]metrics.Sample, error) {
				n, err := readmodel.Lag(ctx, s.pool, metricsLagWindow)
				return metrics.Value(float64(n)), err
			}},
		{Name: "projection_lag_events", Help: "Event log head minus the highest sequence a projection applied in this process.",
			Labels: []string{"projection"},
			Read: func(ctx context.Context) ([]metrics.Sample, error) {
				names := m.Projections()
				if len(names) == 0 {
					return nil, nil
				}
				h, err := s.store.Head(ctx)
				if err != nil {
					return nil, err
				}
				out := make([]metrics.Sample, 0, len(names))
				for _, p := range names {
					pos, _ := m.ProjectionPosition(p)
					out = append(out, metrics.Sample{Labels: []string{p}, Value: float64(max(h-pos, 0))})
				}
				return out, nil
			}},
		{Name: "jobs", Help: "Jobs waiting (queued) or running, by kind (train, score): the job queue's depth.",
			Labels: []string{"kind", "status"},
			Read: func(ctx context.Context) ([]metrics.Sample, error) {
				cs, err := readmodel.UnfinishedJobs(ctx, s.pool)
				out := make([]metrics.Sample, 0, len(cs))
				for _, c := range cs {
					out = append(out, metrics.Sample{Labels: []string{c.Kind, c.Status}, Value: float64(c.N)})
				}
				return out, err
			}},
	}
	if parked != nil {
		srcs = append(srcs, metrics.GaugeSource{Name: "projection_parked_events",
			Help: "Events a projection could not apply and set aside (dead-lettered) for an operator.", Labels: []string{"projection"},
			Read: func(ctx context.Context) ([]metrics.Sample, error) {
				byProj, err := parked(ctx)
				out := make([]metrics.Sample, 0, len(byProj))
				for p, n := range byProj {
					out = append(out, metrics.Sample{Labels: []string{p}, Value: float64(n)})
				}
				return out, err
			}})
	}
	return srcs
}

// queryObserver turns /query outcomes into the query-latency metric.
func queryObserver(m *metrics.Metrics) func(time.Duration, error) {
	return func(d time.Duration, err error) {
		var v *domain.ValidationError
		switch {
		case err == nil:
			m.QueryDone("ok", d)
		case errors.As(err, &v):
			m.QueryDone("rejected", d)
		default:
			m.QueryDone("error", d)
		}
	}
}
