// Package apiserver is process wiring: it assembles the running API
// process — the embedded Kafka broker (when no brokers are configured), the relay, the read-model projection, the
// snapshot projection behind /query, the read-your-writes waiter and the HTTP
// server that speaks HTTP/1.1 and h2c —
// from infrastructure the caller opened. It exists so that `critic serve`,
// `critic run` and the integration tests of every API surface start exactly
// the same server; configuration stays in cmd/critic.
//
// Calls flow from cmd/critic into Start, which builds the pieces and mounts
// the surfaces (handlers/rest, connectapi, otlp, workerapi); nothing below
// imports this package.
package apiserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/handlers/edge"
	"github.com/criticml/critic/handlers/idempotency"
	"github.com/criticml/critic/handlers/queryhost"
	"github.com/criticml/critic/handlers/usecase"
	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/platform/bus"
	"github.com/criticml/critic/platform/duck"
	"github.com/criticml/critic/platform/eventstore"
	"github.com/criticml/critic/platform/instance"
	"github.com/criticml/critic/platform/metrics"
	"github.com/criticml/critic/platform/relay"
	"github.com/criticml/critic/platform/telemetry"
	"github.com/criticml/critic/projections"
	"github.com/criticml/critic/projections/readmodel"
	"github.com/criticml/critic/projections/snapshot"
)

// Config is what the process needs beyond its infrastructure.
type Config struct {
	// Addr is the HTTP listen address; port 0 picks a free one (tests).
	Addr string
	// KafkaBrokers empty starts the embedded broker.
	KafkaBrokers []string
	// KafkaDataDir is where the embedded broker persists; "" keeps it in
	// memory (tests).
	KafkaDataDir string
	// KafkaPort of the embedded broker; 0 picks a free one.
	KafkaPort int
	// WaitTimeout bounds read-your-writes (0 → 5 s).
	WaitTimeout time.Duration
	// MaxBody is the API's request-body limit, which the Idempotency-Key
	// middleware reads up to (0 → 64 MiB, CRITIC_MAX_BODY_BYTES's default).
	MaxBody int64
	// IdempotencyTTL is how long an Idempotency-Key is remembered (0 →
	// idempotency.DefaultTTL, 24 h).
	IdempotencyTTL time.Duration
	// CatchUpAfter is how long a write waits for the bus consumer before it
	// looks whether the consumer stalled and, if so, applies its own events
	// to the read model (0 → readmodel.DefaultCatchUpAfter): about what a
	// crashed instance costs writes.
	CatchUpAfter time.Duration
	// SnapshotDir holds the per-owner DuckDB files of POST /query
	// ($CRITIC_DATA_DIR/snapshots); "" runs no snapshot projection and
	// leaves Server.Snapshots nil (tests of other surfaces).
	SnapshotDir string
	// Query tunes the /query sandbox; the zero value is production's.
	Query duck.Options
	// QueryProcess, when its Command is set, runs the snapshots in a child
	// process under an OS memory limit (handlers/queryhost); otherwise they
	// run in this process (tests of other surfaces).
	QueryProcess QueryProcess
	// HTTP bounds slow and stalled clients (zero fields: defaults).
	HTTP Timeouts
	// InstanceID names this API instance: its snapshot files are its own, so
	// its snapshot consumer group is snapshot-<InstanceID> and sees every
	// partition (DESIGN §1: each API instance keeps its own snapshots).
	InstanceID string
	// Telemetry records metrics and spans of every loop and request; nil
	// records none (and serves no /metrics).
	Telemetry *telemetry.Telemetry
	// MetricsAddr, when set, serves /metrics on its own listener
	// (CRITIC_METRICS_ADDR) instead of the API port; port 0 picks a free
	// one (tests).
	MetricsAddr string
	// ReadyMaxLag is how many unapplied events /readyz tolerates
	// (CRITIC_READY_MAX_LAG; 0 → DefaultReadyMaxLag).
	ReadyMaxLag int64
	// ParkedEvents feeds critic_projection_parked_events: the events each
	// projection set aside; nil reads the dead-letter table
	// (projection_parked).
	ParkedEvents func(ctx context.Context) (map[string]int64, error)
	// CommandOptions configure the command side (the feedback plan new
	// models record).
	CommandOptions []commands.Option
	// Guard bounds how often a projection retries a failing event before
	// parking it; the zero value is production's.
	Guard projections.GuardOptions
	// StepLabelModel is the deployment's step-label model ("" when none):
	// trace details report missing labels as queued for it.
	StepLabelModel string
	// QueryWait is how long POST /query waits for this instance's snapshot
	// to reach the position a query needs before answering 503
	// snapshot_catching_up (CRITIC_QUERY_WAIT; 0 → usecase.DefaultQueryWait,
	// negative → answer at once).
	QueryWait time.Duration
}

// Deps is the infrastructure the caller opened and still owns (Shutdown does
// not close it).
type Deps struct {
	Pool  *pgxpool.Pool
	Store *eventstore.Store
	Blobs blob.Store
	Log   *slog.Logger
}

// Mount adds the API surfaces to mux. It is the caller's so that the routes a
// binary serves are listed where it is wired (cmd/critic) and tests can mount
// what they exercise.
type Mount func(mux *http.ServeMux, s *Server)

// Server is the running API process.
type Server struct {
	// Addr is the address the HTTP server listens on (host:port).
	Addr    string
	Cmds    *commands.Commands
	Queries *readmodel.Queries
	Waiter  *readmodel.Waiter
	Auth    *edge.Authenticator
	// Snapshots serves POST /query; nil without Config.SnapshotDir.
	Snapshots *duck.Snapshots
	// Query is the SQL use case over Snapshots that REST and Connect call:
	// it answers only from a snapshot that reflects the caller's writes.
	Query *usecase.Query
	// Brokers and Publisher let the caller start more bus consumers and
	// producers (job dispatch) with Go.
	Brokers   []string
	Publisher *bus.Publisher
	// Ctx lives until Shutdown.
	Ctx context.Context
	// Telemetry is Config.Telemetry (nil when off), for the loops the
	// caller starts.
	Telemetry *telemetry.Telemetry
	// MetricsAddr is where /metrics is served on its own listener ("" when
	// it is on the API port or off).
	MetricsAddr string
	// Log is the process logger with this instance's id on every line, for
	// the loops the caller starts (job dispatch).
	Log *slog.Logger

	http    *http.Server
	metrics *http.Server
	pool    *pgxpool.Pool
	store   *eventstore.Store
	// readyMaxLag is Config.ReadyMaxLag with its default.
	readyMaxLag int64
	cancel      context.CancelFunc
	wg          sync.WaitGroup
	closers     []func() error
	shutOnce    sync.Once

	// snapPos is the snapshot's log position and snapStart the log head
	// when the instance started (nil/0 without snapshots): /readyz reports
	// the instance not ready until the snapshot reached snapStart.
	snapPos *snapshot.Position
	// queryProc is the query process when the snapshots run in one.
	queryProc *queryhost.Process
	snapStart int64
	// claim holds this instance's id (nil without Config.InstanceID); lost
	// receives why the instance must stop when another took the id over.
	claim *instance.Claim
	lost  chan error
}

// Lost receives an error when this instance lost its instance id to another
// live instance (its database connection broke and the other claimed the
// id meanwhile): the process must stop, or both would split one snapshot
// consumer group.
func (s *Server) Lost() <-chan error { return s.lost }

// watchClaim checks the instance's claim every few seconds; a broken claim
// connection is re-claimed, and an id another instance took meanwhile ends
// this one (Lost).
func (s *Server) watchClaim(ctx context.Context, pool *pgxpool.Pool, cfg Config) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(2 * time.Second):
		}
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := s.claim.Alive(pctx)
		cancel()
		if err == nil || ctx.Err() != nil {
			continue
		}
		s.Log.Warn("instance: the connection holding the instance id broke; claiming it again", "instance", cfg.InstanceID, "err", err)
		_ = s.claim.Release()
		host, _ := os.Hostname()
		claim, aerr := instance.Acquire(ctx, pool, cfg.InstanceID, instance.Options{Host: host, PID: os.Getpid(), Addr: s.Addr, Wait: time.Second})
		var inUse *instance.InUseError
		switch {
		case aerr == nil:
			s.claim = claim
			s.Log.Info("instance: instance id claimed again", "instance", cfg.InstanceID)
		case errors.As(aerr, &inUse):
			s.Log.Error("instance: another instance took this instance id over; stopping", "instance", cfg.InstanceID, "err", aerr)
			s.lost <- aerr
			return
		default:
			s.Log.Warn("instance: cannot claim the instance id again yet", "instance", cfg.InstanceID, "err", aerr)
		}
	}
}

// Start starts the broker (if needed), relay, projection and waiter, mounts
// the routes and starts serving. The background loops outlive parent's
// cancellation until Shutdown, so in-flight requests can finish.
func Start(parent context.Context, cfg Config, deps Deps, mount Mount) (*Server, error) {
	log := deps.Log
	if log == nil {
		log = slog.Default()
	}
	if cfg.InstanceID != "" {
		// Every line of the relay, projections, waiter and consumers names
		// the instance, so an operator of several tells them apart.
		log = log.With("instance", cfg.InstanceID)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(parent))
	s := &Server{cancel: cancel, Log: log, lost: make(chan error, 1), pool: deps.Pool, store: deps.Store, Telemetry: cfg.Telemetry}
	tel := cfg.Telemetry
	if cfg.Telemetry != nil && tel.Metrics != nil && cfg.SnapshotDir != "" {
		cfg.Query.OnQuery = queryObserver(tel.Metrics)
	}
	fail := func(err error) (*Server, error) {
		_ = s.Shutdown()
		return nil, err
	}
	if cfg.InstanceID != "" {
		// Before anything joins a consumer group under this id.
		host, _ := os.Hostname()
		claim, err := instance.Acquire(ctx, deps.Pool, cfg.InstanceID, instance.Options{Host: host, PID: os.Getpid(), Addr: cfg.Addr})
		if err != nil {
			return fail(err)
		}
		s.claim = claim
		s.goRun("instance", func() error { s.watchClaim(ctx, deps.Pool, cfg); return nil })
	}

	brokers := cfg.KafkaBrokers
	if len(brokers) == 0 {
		emb, err := bus.StartEmbedded(ctx, bus.EmbeddedConfig{DataDir: cfg.KafkaDataDir, Port: cfg.KafkaPort})
		if err != nil {
			return fail(fmt.Errorf("start the embedded Kafka broker (set KAFKA_BROKERS to use your own): %w", err))
		}
		s.closers = append(s.closers, emb.Close)
		brokers = emb.Addrs()
		log.Info("KAFKA_BROKERS is unset: using the embedded broker", "addr", brokers, "dir", cfg.KafkaDataDir)
	}
	wlog := watermill.NewSlogLogger(log)
	pub, err := bus.NewPublisher(bus.Config{Brokers: brokers, Logger: log}, wlog)
	if err != nil {
		return fail(err)
	}
	s.closers = append([]func() error{pub.Close}, s.closers...)
	s.Brokers, s.Publisher, s.Ctx = brokers, pub, ctx
	sub, err := bus.NewSubscriber(bus.Config{Brokers: brokers, ConsumerGroup: readmodel.Name, Logger: log}, wlog)
	if err != nil {
		return fail(err)
	}
	s.closers = append([]func() error{sub.Close}, s.closers...)

	s.Cmds = commands.New(deps.Store, cfg.CommandOptions...)
	s.Queries = readmodel.NewQueries(deps.Pool).WithLabeler(cfg.StepLabelModel)
	wait := cfg.WaitTimeout
	if wait <= 0 {
		wait = 5 * time.Second
	}
	proj := readmodel.New(deps.Pool, deps.Blobs, log).WithKeyring(deps.Store.Keyring())
	s.Waiter = readmodel.NewWaiter(deps.Pool, wait).WithCatchUp(proj, deps.Store, cfg.CatchUpAfter, log)
	s.Auth = edge.NewAuthenticator(s.Queries)

	rel := relay.New(relayName, deps.Store, pub, log)
	if tel != nil {
		rel.WithObserver(tel)
	}
	s.goRun("relay", func() error { return rel.Run(ctx) })
	s.goRun("readmodel", func() error {
		return projections.NewGuard(readmodel.Name, deps.Pool, deps.Store, proj, log, cfg.Guard).Observe(readmodel.Name, s.Observer()).Run(ctx, sub.ConsumeBatches, relay.Topic)
	})
	s.goRun("waiter", func() error { s.Waiter.Listen(ctx); return nil })
	s.goRun("readmodel-standby", func() error { proj.RunStandby(ctx, deps.Store, 0, -1, log); return nil })

	if cfg.SnapshotDir != "" {
		if err := s.startSnapshots(ctx, cfg, deps, brokers, wlog); err != nil {
			return fail(err)
		}
	}

	if err := s.serveHTTP(ctx, cfg, deps, mount); err != nil {
		return fail(err)
	}
	return s, nil
}

// serveHTTP mounts the health, readiness and metrics routes and the
// caller's, wraps them in the idempotency and observing middleware and
// starts serving on cfg.Addr.
func (s *Server) serveHTTP(ctx context.Context, cfg Config, deps Deps, mount Mount) error {
	log, tel := s.Log, cfg.Telemetry
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		edge.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	s.readyMaxLag = cfg.ReadyMaxLag
	if s.readyMaxLag <= 0 {
		s.readyMaxLag = DefaultReadyMaxLag
	}
	mux.HandleFunc("GET /readyz", s.readyz)
	observing := edge.Observing{Log: log}
	if tel != nil {
		observing.Tracer = tel.Tracer()
	}
	if tel != nil && tel.Metrics != nil {
		m := tel.Metrics
		observing.Metrics = m
		parked := cfg.ParkedEvents
		if parked == nil {
			parked = func(ctx context.Context) (map[string]int64, error) { return projections.ParkedCounts(ctx, deps.Pool) }
		}
		m.AddGauges(s.gauges(m, parked)...)
		if cfg.SnapshotDir != "" {
			m.AddGauges(metrics.SnapshotFiles(cfg.SnapshotDir)...)
		}
		if cfg.MetricsAddr == "" {
			mux.Handle("GET /metrics", m.Handler())
		} else if err := s.serveMetrics(cfg.MetricsAddr, m); err != nil {
			return err
		}
	}
	if mount != nil {
		mount(mux, s)
	}

	maxBody := cfg.MaxBody
	if maxBody <= 0 {
		maxBody = edge.DefaultMaxBody
	}
	keys := idempotency.NewStore(deps.Pool, cfg.IdempotencyTTL, 0)
	s.goRun("idempotency-sweeper", func() error {
		keys.RunSweeper(ctx, 10*time.Minute, func(err error) { log.Warn("sweeping expired idempotency keys", "err", err) })
		return nil
	})
	handler := idempotency.New(keys, s.Auth, maxBody, log).Wrap(mux)

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("CRITIC_ADDR %s: %w", cfg.Addr, err)
	}
	s.Addr = ln.Addr().String()
	to := cfg.HTTP.withDefaults()
	s.http = &http.Server{Handler: edge.Observe(extendWrites(edge.Compress(handler), to.Write), observing), ReadHeaderTimeout: to.ReadHeader,
		ReadTimeout: to.Read, WriteTimeout: to.Write, IdleTimeout: to.Idle}
	// gRPC clients speak HTTP/2 without TLS (h2c) on the same port as REST.
	s.http.Protocols = new(http.Protocols)
	s.http.Protocols.SetHTTP1(true)
	s.http.Protocols.SetUnencryptedHTTP2(true)
	s.goRun("http", func() error {
		if err := s.http.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	return nil
}

// watchPosition looks after a snapshot position that stopped moving while
// later events wait behind a missing one (the bus lost or has not
// delivered it: queries that need it answer 503 snapshot_catching_up). It
// logs that once per episode and then reads the missing events from the
// event log itself (heal: CatchUp to the log's head; events already
// applied are skipped), so the snapshot does not wait for an operator's
// `critic replay snapshot`. A heal that fails is logged and tried again at
// the next check.
func watchPosition(ctx context.Context, log *slog.Logger, group string, pos *snapshot.Position, heal func(context.Context) error) {
	const after = 30 * time.Second
	warned := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(5 * time.Second):
		}
		applied, pending, stuck := pos.Stuck(after)
		switch {
		case stuck:
			if !warned {
				log.Warn("query snapshot: stuck behind an event the bus has not delivered; reading it from the event log (queries needing it answer 503 snapshot_catching_up meanwhile)",
					"group", group, "applied", applied, "missing_seq_after", applied, "pending", pending)
				warned = true
			}
			if err := heal(ctx); err != nil && ctx.Err() == nil {
				log.Warn("query snapshot: reading the missing events from the event log failed; trying again", "group", group, "err", err)
			} else if err == nil {
				log.Info("query snapshot: moving again (the missing events were read from the event log)", "group", group, "applied", pos.Applied())
				warned = false
			}
		case warned:
			log.Info("query snapshot: moving again", "group", group, "applied", applied)
			warned = false
		}
	}
}

// relayName is the relay's cursor key in relay_cursor.
const relayName = "kafka"

// Observer reports the projections' batches to the telemetry (nil when
// telemetry is off): what Guard.Observe takes.
func (s *Server) Observer() projections.Observer {
	if s.Telemetry == nil {
		return nil
	}
	return s.Telemetry
}

// serveMetrics serves /metrics alone on addr (CRITIC_METRICS_ADDR), for
// deployments that keep the scrape port off the public one.
func (s *Server) serveMetrics(addr string, m *metrics.Metrics) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("CRITIC_METRICS_ADDR %s: %w", addr, err)
	}
	s.MetricsAddr = ln.Addr().String()
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	s.metrics = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	srv := s.metrics
	s.goRun("metrics", func() error {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	return nil
}

// Go runs fn in the background until Shutdown; its ctx is s.Ctx. A closer,
// when given, runs at Shutdown before waiting for fn.
func (s *Server) Go(name string, fn func() error, closer func() error) {
	if closer != nil {
		s.closers = append([]func() error{closer}, s.closers...)
	}
	s.goRun(name, fn)
}

func (s *Server) goRun(name string, fn func() error) {
	s.wg.Go(func() {
		if err := fn(); err != nil && !errors.Is(err, context.Canceled) {
			s.Log.Error(name+" stopped", "err", err)
		}
	})
}

// Shutdown stops accepting requests, lets in-flight ones finish (up to 10 s),
// then stops the background loops and the broker. It is safe to call twice.
func (s *Server) Shutdown() error {
	s.shutOnce.Do(func() {
		if s.http != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_ = s.http.Shutdown(ctx)
			cancel()
		}
		if s.metrics != nil {
			_ = s.metrics.Close()
		}
		// Stop the loops first, while the broker they talk to is still up
		// (a worker or consumer cut off mid-fetch only logs noise), then
		// close clients and the broker. A loop that does not return within
		// 10 s is unblocked by closing its client.
		s.cancel()
		done := make(chan struct{})
		go func() { s.wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
		}
		for _, c := range s.closers {
			_ = c()
		}
		<-done
		if s.Snapshots != nil {
			// After the projection stopped: closing checkpoints the files.
			_ = s.Snapshots.Close()
		}
		if s.queryProc != nil {
			s.queryProc.Wait() // the child checkpoints its files as it exits
		}
		if s.claim != nil {
			_ = s.claim.Release()
		}
	})
	return nil
}
