package main

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/handlers/apiserver"
	"github.com/criticml/critic/handlers/blobdl"
	"github.com/criticml/critic/handlers/connectapi"
	"github.com/criticml/critic/handlers/edge"
	"github.com/criticml/critic/handlers/otlp"
	"github.com/criticml/critic/handlers/rest"
	"github.com/criticml/critic/handlers/usecase"
	"github.com/criticml/critic/handlers/workerapi"
	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/platform/instance"
	"github.com/criticml/critic/platform/requestid"
	"github.com/criticml/critic/platform/telemetry"
	"github.com/criticml/critic/web"
)

// newLogger is the process logger, also made slog's default: every line
// logged with a request's context carries its request_id.
func newLogger() *slog.Logger {
	level := slog.LevelInfo
	if os.Getenv("CRITIC_LOG_LEVEL") == "debug" {
		level = slog.LevelDebug
	}
	log := slog.New(requestid.NewLogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})))
	slog.SetDefault(log)
	return log
}

// cmdServe runs the API with its relay and projections until interrupted.
func cmdServe(ctx context.Context, _ []string) error {
	in, err := boot(ctx)
	if err != nil {
		return err
	}
	defer in.Close()
	srv, err := startServer(ctx, in)
	if err != nil {
		return err
	}
	fmt.Printf("Critic API listening on http://%s\n", srv.Addr)
	logStart(in, srv)
	select {
	case <-ctx.Done():
	case err := <-srv.Lost():
		_ = srv.shutdown()
		return err
	}
	return srv.shutdown()
}

// logStart writes the one line an operator of several instances reads
// first: which instance this is and what it talks to (the database without
// its password).
func logStart(in *infra, srv *server) {
	cc := in.pool.Config().ConnConfig
	blobs := in.cfg.BlobURL // never empty: loadConfig defaults it
	if u, err := url.Parse(blobs); err == nil && u.User != nil {
		u.User = nil // never log credentials
		blobs = u.String()
	}
	brokers := strings.Join(srv.Brokers, ",")
	if len(in.cfg.KafkaBrokers) == 0 {
		brokers += " (embedded)"
	}
	in.log.Info("Critic API started", "instance", in.cfg.InstanceID, "addr", srv.Addr, "brokers", brokers,
		"database", fmt.Sprintf("%s:%d/%s", cc.Host, cc.Port, cc.Database), "blob_store", blobs)
}

// instanceID is CRITIC_INSTANCE_ID, or the id generated once into the data
// directory: unique per data directory, so two instances on one host never
// share a snapshot consumer group by default.
func instanceID(cfg config) (string, error) {
	if cfg.InstanceID != "" {
		return cfg.InstanceID, nil
	}
	return instance.LoadOrCreateID(cfg.DataDir)
}

// server is the running API process (see handlers/apiserver, which assembles it),
// with what `critic run` needs besides: the data directory and the worker token.
type server struct {
	*apiserver.Server
	dataDir string
	token   string
}

// startServer starts the API with the routes this binary serves: REST and,
// on the same port, the Connect/gRPC services.
func startServer(parent context.Context, in *infra) (*server, error) {
	cfg := in.cfg
	token, err := workerToken(cfg)
	if err != nil {
		return nil, fmt.Errorf("worker token: %w", err)
	}
	id, err := instanceID(cfg)
	if err != nil {
		return nil, err
	}
	in.cfg.InstanceID = id // the start line and every log line name it
	evalPolicy, err := loadEvaluatorPolicy()
	if err != nil {
		return nil, err
	}
	evalSchedule, err := loadEvaluatorSchedule()
	if err != nil {
		return nil, err
	}
	tel, err := telemetry.New(parent, telemetry.Options{Service: "critic-api", Metrics: cfg.Metrics}, in.log)
	if err != nil {
		return nil, err
	}
	// What new models of this process say about where they train until a
	// worker claims them.
	compute := rewardmodels.ComputeWorker
	if in.localWorker {
		compute = rewardmodels.ComputeLocal
	}
	cmdOpts := append(cfg.LLM.commandOptions(), commands.WithCompute(compute), commands.WithModelRoots(cfg.ModelRoots...), commands.WithSecret(token), commands.WithOTLPCache(cfg.OTLPCacheMemory))
	if tel.Metrics != nil {
		cmdOpts = append(cmdOpts, commands.WithErasureCounter(tel.Metrics.TraceErased))
	}
	a, err := apiserver.Start(parent, apiserver.Config{
		Addr:           cfg.Addr,
		KafkaBrokers:   cfg.KafkaBrokers,
		KafkaDataDir:   filepath.Join(cfg.DataDir, "kafka"),
		KafkaPort:      cfg.KafkaPort,
		WaitTimeout:    5 * time.Second,
		MaxBody:        cfg.MaxBody,
		SnapshotDir:    filepath.Join(cfg.DataDir, "snapshots"),
		Query:          cfg.queryOptions(),
		QueryProcess:   cfg.QueryProcess,
		InstanceID:     id,
		QueryWait:      cfg.QueryWait,
		Telemetry:      tel,
		MetricsAddr:    cfg.MetricsAddr,
		ReadyMaxLag:    int64(cfg.ReadyMaxLag),
		HTTP:           cfg.HTTP,
		CommandOptions: cmdOpts,
		StepLabelModel: modelName(cfg.LLM.StepLabel),
	}, apiserver.Deps{Pool: in.pool, Store: in.store, Blobs: in.blobs, Log: in.log}, func(mux *http.ServeMux, a *apiserver.Server) {
		fleet := workerapi.NewFleet(time.Now)
		deps := edge.Deps{Cmds: a.Cmds, Queries: a.Queries, Waiter: a.Waiter, Auth: a.Auth, Blobs: in.blobs, Query: a.Query,
			MaxBody: cfg.MaxBody, Assessments: assessments(cfg.LLM, a), EvaluatorPolicy: &evalPolicy, Workers: fleet, ModelRoots: cfg.ModelRoots}
		rest.New(deps).Register(mux)
		wcfg := workerapi.Config{Cmds: a.Cmds, Token: token, Lease: cfg.WorkerLease, TrainingQueue: a.Queries, Fleet: fleet}
		if tel.Metrics != nil {
			wcfg.Observer = tel.Metrics
		}
		workerapi.New(wcfg).Register(mux)
		if local, ok := in.blobs.(*blob.Local); ok {
			mux.Handle(blobdl.Pattern, blobdl.Handler(local))
		}
		rest.New(deps).RegisterQuery(mux)
		otlp.NewReceiver(deps).Register(mux)
		// The Connect services on the REST port: one handler per service
		// serves Connect, gRPC and gRPC-Web (gRPC reaches it over h2c).
		connectapi.Register(mux, deps)
		connectapi.RegisterHealthAndReflection(mux, a.Ready)
		// The browser app, at / (everything more specific above wins).
		mux.Handle(web.Pattern, web.Handler())
	})
	if err != nil {
		_ = tel.Shutdown(context.Background())
		return nil, err
	}
	if a.MetricsAddr != "" {
		fmt.Printf("Critic metrics on http://%s/metrics\n", a.MetricsAddr)
	}
	if local, ok := in.blobs.(*blob.Local); ok {
		// Links point at the address actually bound (CRITIC_ADDR may ask
		// for port 0) unless CRITIC_PUBLIC_URL names the public one.
		if err := local.SetPublicURL(cmp.Or(cfg.PublicURL, "http://"+a.Addr)); err != nil {
			_ = a.Shutdown()
			return nil, err
		}
	}
	if cfg.PProfAddr != "" {
		ps, addr, err := startPProf(cfg.PProfAddr)
		if err != nil {
			_ = a.Shutdown()
			return nil, err
		}
		a.Go("pprof", func() error { <-a.Ctx.Done(); return nil }, ps.Close)
		fmt.Printf("profiler (unauthenticated, loopback only) on http://%s/debug/pprof/\n", addr)
	}
	startJobs(a, in)
	startEvaluatorSchedule(a, in, evalSchedule)
	return &server{Server: a, dataDir: cfg.DataDir, token: token}, nil
}

// assessments is where section summaries and completion estimates come
// from: the worker tier's fast model through the assessment cache, or nil
// (the endpoints answer unavailable naming CRITIC_FAST_MODEL) without one.
func assessments(r llmRoles, s *apiserver.Server) usecase.Assessments {
	if r.Fast == nil {
		return nil
	}
	return &usecase.Generator{Backend: usecase.Backend{Cmds: s.Cmds, Queries: s.Queries, Waiter: s.Waiter}}
}

// shutdown stops accepting requests, lets in-flight ones finish, then stops
// the background loops and the broker, and flushes pending spans.
func (s *server) shutdown() error {
	err := s.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if terr := s.Telemetry.Shutdown(ctx); terr != nil {
		slog.Warn("flushing spans", "err", terr)
	}
	return err
}
