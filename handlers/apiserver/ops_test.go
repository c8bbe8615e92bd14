package apiserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/handlers/apiserver"
	"github.com/criticml/critic/handlers/connectapi"
	"github.com/criticml/critic/handlers/edge"
	"github.com/criticml/critic/handlers/rest"
	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/platform/eventstore"
	"github.com/criticml/critic/platform/logtest"
	"github.com/criticml/critic/platform/metrics/metricstest"
	"github.com/criticml/critic/platform/pg"
	"github.com/criticml/critic/platform/pg/pgtest"
	"github.com/criticml/critic/platform/requestid"
	"github.com/criticml/critic/platform/telemetry"
)

// opsEnv is one API process assembled as `critic serve` does it, with
// metrics on, its log captured, and one account.
type opsEnv struct {
	srv    *apiserver.Server
	url    string
	key    string
	userID string
	pool   *pgxpool.Pool
	tel    *telemetry.Telemetry
	logs   *logtest.Buffer
	store  *eventstore.Store // the server's event store (and its blobs)
	blobs  blob.Store
}

func startOps(t testing.TB, adjust func(*apiserver.Config)) *opsEnv {
	t.Helper()
	ctx := context.Background()
	pool, err := pg.Connect(ctx, pgtest.NewDatabase(t))
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	blobs, err := blob.NewLocal(t.TempDir())
	require.NoError(t, err)
	logs := &logtest.Buffer{}
	log := slog.New(requestid.NewLogHandler(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	tel, err := telemetry.New(ctx, telemetry.Options{Service: "critic-api-test", Metrics: true}, log)
	require.NoError(t, err)
	cfg := apiserver.Config{Addr: "127.0.0.1:0", WaitTimeout: 30 * time.Second, SnapshotDir: t.TempDir(), Telemetry: tel}
	if adjust != nil {
		adjust(&cfg)
	}
	store := eventstore.New(pool, blobs)
	srv, err := apiserver.Start(ctx, cfg, apiserver.Deps{Pool: pool, Store: store, Blobs: blobs, Log: log},
		func(mux *http.ServeMux, s *apiserver.Server) {
			rest.New(edge.Deps{Cmds: s.Cmds, Queries: s.Queries, Waiter: s.Waiter, Auth: s.Auth, MaxBody: 1 << 20, Blobs: blobs}).Register(mux)
			rest.New(edge.Deps{Query: s.Query, Auth: s.Auth, MaxBody: 1 << 20}).RegisterQuery(mux)
			connectapi.Register(mux, edge.Deps{Cmds: s.Cmds, Queries: s.Queries, Waiter: s.Waiter, Auth: s.Auth,
				Blobs: blobs, Query: s.Query, MaxBody: 1 << 20})
			connectapi.RegisterHealthAndReflection(mux, s.Ready)
		})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Shutdown() })
	e := &opsEnv{srv: srv, url: "http://" + srv.Addr, pool: pool, tel: tel, logs: logs, store: store, blobs: blobs}
	res, err := srv.Cmds.CreateUser.Handle(ctx, commands.CreateUser{Name: "ops"})
	require.NoError(t, err)
	require.NoError(t, srv.Waiter.Wait(ctx, res.LastEventID))
	e.key, e.userID = res.APIKey, res.UserID
	return e
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

func (e *opsEnv) do(t testing.TB, method, path string, body any, headers ...string) reply {
	t.Helper()
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, e.url+path, rd)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+e.key)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return reply{status: resp.StatusCode, header: resp.Header, body: b}
}

func traceLine(id string) string {
	return fmt.Sprintf(`{"id":"%s","steps":[{"role":"user","content":"Refund order %s"},{"role":"assistant","content":"Done."}]}`, id, id)
}

func (e *opsEnv) importTraces(t *testing.T, ids ...string) reply {
	t.Helper()
	lines := make([]string, len(ids))
	for i, id := range ids {
		lines[i] = traceLine(id)
	}
	return e.do(t, "POST", "/api/v1/rm/traces/import", map[string]any{"format": "stash", "data": strings.Join(lines, "\n")})
}

func eventCount(t *testing.T, pool *pgxpool.Pool) int64 {
	var n int64
	require.NoError(t, pool.QueryRow(context.Background(), "SELECT count(*) FROM events").Scan(&n))
	return n
}

// TestMetricsCountWhatHappened scrapes /metrics before and after a scripted
// run and checks every family moved by exactly what the run did.
func TestMetricsCountWhatHappened(t *testing.T) {
	e := startOps(t, nil)
	scrape := func() metricstest.Families { return metricstest.Scrape(t, e.url+"/metrics") }
	importRoute := "route=POST /api/v1/rm/traces/import"
	before := scrape()
	require.Zero(t, before.Value("critic_http_requests_total", importRoute))

	for i := range 3 {
		r := e.importTraces(t, fmt.Sprintf("m-%d", i), fmt.Sprintf("m-%d-b", i))
		require.Equal(t, http.StatusOK, r.status, string(r.body))
	}
	bad := e.do(t, "POST", "/api/v1/rm/traces/import", map[string]any{"format": "stash", "data": "{not json"})
	require.Equal(t, http.StatusUnprocessableEntity, bad.status)
	r := e.do(t, "GET", "/api/v1/rm/traces/00000000-0000-0000-0000-000000000001", nil)
	require.Equal(t, http.StatusNotFound, r.status)
	r = e.do(t, "GET", "/api/v1/rm/traces/00000000-0000-0000-0000-000000000002", nil)
	require.Equal(t, http.StatusNotFound, r.status)
	// Paths no route matches share one series, whatever they are.
	for _, p := range []string{"/nope/1", "/nope/2", "/wp-admin.php"} {
		resp, err := http.Get(e.url + p)
		require.NoError(t, err)
		resp.Body.Close()
	}
	var q reply
	require.Eventually(t, func() bool {
		q = e.do(t, "POST", "/api/v1/rm/query", map[string]any{"sql": "SELECT count(*) FROM traces"})
		return q.status == http.StatusOK && strings.Contains(string(q.body), "[6]")
	}, 20*time.Second, 50*time.Millisecond, "the snapshot never showed the traces: %s", q.body)
	okQueries := scrape().Value("critic_query_duration_seconds", "outcome=ok")
	rej := e.do(t, "POST", "/api/v1/rm/query", map[string]any{"sql": "DROP TABLE traces"})
	require.Equal(t, http.StatusUnprocessableEntity, rej.status)

	// Every stored event has been relayed and applied before we compare.
	total := eventCount(t, e.pool)
	var after metricstest.Families
	require.Eventually(t, func() bool {
		after = scrape()
		return after.Value("critic_relay_published_events_total") >= float64(total) &&
			after.Value("critic_projection_events_total", "projection=readmodel") >= float64(total) &&
			after.Value("critic_projection_events_total", "projection=snapshot") >= float64(total)
	}, 20*time.Second, 50*time.Millisecond)

	require.Equal(t, float64(3), after.Value("critic_http_requests_total", importRoute, "code=200"))
	require.Equal(t, float64(1), after.Value("critic_http_requests_total", importRoute, "code=422"))
	require.Equal(t, float64(4), after.Value("critic_http_request_duration_seconds", importRoute))
	require.Equal(t, float64(2), after.Value("critic_http_requests_total", "route=GET /api/v1/rm/traces/{trace_id}", "code=404"))
	require.Equal(t, float64(3), after.Value("critic_http_requests_total", "route=unmatched", "code=404"))
	for _, route := range after.LabelValues("critic_http_requests_total", "route") {
		require.NotContains(t, route, "00000000", "a raw path became a label")
		require.NotContains(t, route, "wp-admin", "a raw path became a label")
	}
	require.Equal(t, okQueries, after.Value("critic_query_duration_seconds", "outcome=ok"))
	require.Equal(t, float64(1), after.Value("critic_query_duration_seconds", "outcome=rejected"))

	// The relay published each event once (no broker trouble here); the
	// projections applied at least every event (the bus may redeliver).
	require.Equal(t, float64(total), after.Value("critic_relay_published_events_total"))
	require.Equal(t, float64(0), after.Value("critic_relay_publish_batches_total", "outcome=error"))
	var head int64
	require.NoError(t, e.pool.QueryRow(context.Background(), "SELECT max(seq) FROM events").Scan(&head))
	require.Equal(t, float64(head), after.Value("critic_event_log_head_seq"))
	require.Equal(t, float64(head), after.Value("critic_relay_cursor_seq"))
	require.Equal(t, float64(0), after.Value("critic_relay_lag_events"))
	require.Equal(t, float64(0), after.Value("critic_readmodel_lag_events"))
	require.Equal(t, float64(head), after.Value("critic_projection_position_seq", "projection=readmodel"))
	require.Equal(t, float64(0), after.Value("critic_projection_lag_events", "projection=readmodel"))
	require.GreaterOrEqual(t, after.Value("critic_projection_batch_events", "projection=readmodel"), float64(1))
	require.Equal(t, float64(0), after.Value("critic_projection_batch_errors_total", "projection=readmodel"))

	// No jobs yet, and the gauges say so rather than vanishing.
	require.True(t, after.Has("critic_jobs", "kind=train", "status=queued"))
	require.Equal(t, float64(0), after.Value("critic_jobs"))
	// One owner, one snapshot file.
	require.Equal(t, float64(1), after.Value("critic_duckdb_snapshots"))
	require.Greater(t, after.Value("critic_duckdb_snapshot_bytes"), float64(0))
	require.True(t, after.Has("go_goroutines"), "the Go runtime collector is registered")
	require.False(t, after.Has("critic_projection_parked_events"), "no dead-letter source wired: no series")
	require.Equal(t, float64(0), after.Value("critic_metrics_source_errors_total"))
}

// TestParkedEventsGauge: the dead-letter count is read from the function the
// caller wires, at scrape time.
func TestParkedEventsGauge(t *testing.T) {
	var mu sync.Mutex
	parked := map[string]int64{"readmodel": 2}
	e := startOps(t, func(c *apiserver.Config) {
		c.ParkedEvents = func(context.Context) (map[string]int64, error) {
			mu.Lock()
			defer mu.Unlock()
			return map[string]int64{"readmodel": parked["readmodel"]}, nil
		}
	})
	require.Equal(t, float64(2), metricstest.Scrape(t, e.url+"/metrics").Value("critic_projection_parked_events", "projection=readmodel"))
	mu.Lock()
	parked["readmodel"] = 0
	mu.Unlock()
	require.Equal(t, float64(0), metricstest.Scrape(t, e.url+"/metrics").Value("critic_projection_parked_events", "projection=readmodel"))
}

// TestMetricsOnTheirOwnAddress: with CRITIC_METRICS_ADDR the API port does
// not serve /metrics.
func TestMetricsOnTheirOwnAddress(t *testing.T) {
	e := startOps(t, func(c *apiserver.Config) { c.MetricsAddr = "127.0.0.1:0" })
	require.NotEmpty(t, e.srv.MetricsAddr)
	resp, err := http.Get(e.url + "/metrics")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	fams := metricstest.Scrape(t, "http://"+e.srv.MetricsAddr+"/metrics")
	// The request just made to the API port was counted there.
	require.Equal(t, float64(1), fams.Value("critic_http_requests_total", "route=unmatched", "code=404"))
}

type readyReply struct {
	Status string `json:"status"`
	Checks map[string]struct {
		OK     bool   `json:"ok"`
		Error  string `json:"error"`
		Lag    *int64 `json:"lag"`
		MaxLag int64  `json:"max_lag"`
	} `json:"checks"`
}

func (e *opsEnv) readyz(t *testing.T) (int, readyReply) {
	t.Helper()
	resp, err := http.Get(e.url + "/readyz")
	require.NoError(t, err)
	defer resp.Body.Close()
	var body readyReply
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	return resp.StatusCode, body
}

// TestReadyzFollowsTheProjection stops the read-model projection for real
// (it cannot take its apply lock while the test holds it), appends more
// events than the allowed lag, and watches /readyz go 503 and back to 200
// once the projection catches up. /healthz stays 200 throughout.
func TestReadyzFollowsTheProjection(t *testing.T) {
	e := startOps(t, func(c *apiserver.Config) { c.ReadyMaxLag = 3 })
	ctx := context.Background()
	// A new account is several events (the user, its admin member, its
	// key): the query snapshot may trail the read model for a moment.
	require.Eventually(t, func() bool { return e.srv.Ready(ctx) == nil }, 20*time.Second, 50*time.Millisecond, "the instance becomes ready")
	status, body := e.readyz(t)
	require.Equal(t, http.StatusOK, status, "%+v", body)
	require.Equal(t, "ready", body.Status)
	for _, c := range []string{"database", "broker", "readmodel"} {
		require.True(t, body.Checks[c].OK, c)
	}

	conn, err := e.pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	_, err = conn.Exec(ctx, "SELECT pg_advisory_lock(7210010)") // readmodel's applyLockKey
	require.NoError(t, err)
	locked := true
	defer func() {
		if locked {
			_, _ = conn.Exec(ctx, "SELECT pg_advisory_unlock(7210010)")
		}
	}()
	for i := range 5 {
		_, err := e.srv.Cmds.CreateUser.Handle(ctx, commands.CreateUser{Name: fmt.Sprintf("lagging-%d", i)})
		require.NoError(t, err)
	}
	status, body = e.readyz(t)
	require.Equal(t, http.StatusServiceUnavailable, status)
	require.Equal(t, "not_ready", body.Status)
	rm := body.Checks["readmodel"]
	require.False(t, rm.OK)
	require.Contains(t, rm.Error, "behind the event log")
	require.NotNil(t, rm.Lag)
	require.Greater(t, *rm.Lag, int64(3))
	require.Equal(t, int64(3), rm.MaxLag)
	require.True(t, body.Checks["database"].OK)
	require.True(t, body.Checks["broker"].OK)
	fams := metricstest.Scrape(t, e.url+"/metrics")
	require.Greater(t, fams.Value("critic_readmodel_lag_events"), float64(3))
	resp, err := http.Get(e.url + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "a lagging instance is alive")

	_, err = conn.Exec(ctx, "SELECT pg_advisory_unlock(7210010)")
	require.NoError(t, err)
	locked = false
	require.Eventually(t, func() bool {
		status, _ := e.readyz(t)
		return status == http.StatusOK
	}, 30*time.Second, 50*time.Millisecond, "the projection caught up but /readyz stayed not ready")
	_, body = e.readyz(t)
	require.Equal(t, int64(0), *body.Checks["readmodel"].Lag)
}

// TestDashboardQueriesExistingFamilies: every metric the Grafana dashboard
// under deploy/ queries is one an API or worker process registers, so a
// renamed family cannot leave a panel silently empty.
func TestDashboardQueriesExistingFamilies(t *testing.T) {
	e := startOps(t, func(c *apiserver.Config) {
		// As the lead wires the dead-letter table.
		c.ParkedEvents = func(context.Context) (map[string]int64, error) { return map[string]int64{}, nil }
	})
	known := map[string]bool{}
	for _, n := range e.tel.Metrics.FamilyNames() {
		known[n] = true
	}
	for n := range metricstest.Scrape(t, e.url+"/metrics") {
		known[n] = true
	}
	raw, err := os.ReadFile(filepath.Join(pgtest.ModuleRoot(t), "deploy", "grafana", "critic-dashboard.json"))
	require.NoError(t, err)
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(raw, &dash))
	name := regexp.MustCompile(`\b(?:critic|go|process)_[a-z_]+\b`)
	queried := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			for _, n := range name.FindAllString(tg.Expr, -1) {
				base := n
				for _, suffix := range []string{"_bucket", "_count", "_sum"} {
					if b, ok := strings.CutSuffix(n, suffix); ok && known[b] {
						base = b
					}
				}
				require.True(t, known[base], "panel %q queries %s, which no process registers", p.Title, n)
				queried++
			}
		}
	}
	require.Greater(t, queried, 30)
}
