package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/gpuworker/worker"
	"github.com/criticml/critic/platform/telemetry"
)

// cmdWorker runs a standalone worker (DESIGN §8): it consumes critic.jobs.train
// and critic.jobs.score from KAFKA_BROKERS in the "workers" group, talks to the
// API at CRITIC_API_URL with a worker token and reads/writes BLOB_URL. It never
// needs DATABASE_URL.
func cmdWorker(ctx context.Context, args []string) error {
	for _, a := range args {
		switch a {
		case "-h", "--help", "help":
			fmt.Print(workerUsage)
			return nil
		default:
			return usageError{fmt.Sprintf("critic worker takes no arguments (got %q); it is configured by the environment: critic worker --help", a)}
		}
	}
	cfg, err := loadConfig() // CRITIC_DATA_DIR, KAFKA_BROKERS, BLOB_URL, S3_ENDPOINT
	if err != nil {
		return err
	}
	wc, err := workerConfigFromEnv(cfg)
	if err != nil {
		return err
	}
	log := newLogger()
	in := &infra{cfg: cfg, log: log}
	if err := in.openBlobs(ctx); err != nil {
		return err
	}
	wc.Blobs, wc.Log = in.blobs, log
	tel, err := telemetry.New(ctx, telemetry.Options{Service: "critic-worker", Metrics: cfg.Metrics && cfg.WorkerMetricsAddr != "off"}, log)
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = tel.Shutdown(sctx)
	}()
	wc.Observer = workerObserver(tel)
	cfg.LLM.workerModels(&wc, llmObserver(tel))
	if tel.Metrics != nil {
		addr, stop, err := serveWorkerMetrics(cfg.WorkerMetricsAddr, tel)
		switch {
		case err == nil:
			defer stop()
			fmt.Printf("Critic worker metrics on http://%s/metrics\n", addr)
		case os.Getenv("CRITIC_WORKER_METRICS_ADDR") != "":
			return err // asked for explicitly: fail at start
		default:
			// Several workers on one machine share the default port: the
			// first one serves it, the others say so and work on.
			log.Warn("worker metrics not served: the default address is taken; set CRITIC_WORKER_METRICS_ADDR", "err", err)
		}
	}
	if cfg.PProfAddr != "" {
		ps, addr, err := startPProf(cfg.PProfAddr)
		if err != nil {
			return err
		}
		defer ps.Close()
		fmt.Printf("profiler (unauthenticated, loopback only) on http://%s/debug/pprof/\n", addr)
	}
	fmt.Printf("Critic worker %s: API %s, Kafka %s (group %s), blobs %s, data %s\n",
		wc.WorkerID, wc.APIURL, strings.Join(wc.Brokers, ","), jobs.ConsumerGroup, cfg.BlobURL, cfg.DataDir)
	return worker.Run(ctx, wc)
}

// workerUsage is `critic worker --help`: what the worker does and the
// variables it reads, so an operator can set one up without the README.
const workerUsage = `critic worker — a standalone training, scoring, extraction and title worker

Usage:
  critic worker            run until SIGINT/SIGTERM
  critic worker --help     this text

At start the worker checks CRITIC_API_URL and its token (POST /api/v1/worker/hello):
a refused token stops it with an error; an unreachable API is retried, and no
job is taken until it answers. A free worker pulls the oldest queued training
attempt from the API (Kafka messages only wake it); on SIGTERM it stops the
attempt it runs and hands it back, so the model is queued for the next free
worker. A worker that dies is noticed when its lease expires: the attempt is
retried, up to 3 lost runs, then fails with the reason.

Environment:
  CRITIC_API_URL           the API's base URL, or several, comma-separated
                           (http://api-1:8080,http://api-2:8080): the worker fails
                           over between them (required)
  CRITIC_WORKER_TOKEN      the API's worker token (or $CRITIC_DATA_DIR/worker_token)
  CRITIC_WORKER_ID         this worker's name in claims and on the model page
                           (default hostname-pid)
  KAFKA_BROKERS            comma-separated host:port (required)
  BLOB_URL, S3_ENDPOINT    the blob store the API uses (file://… or s3://bucket/prefix)
  CRITIC_DATA_DIR          scratch space and the base-model cache (default .data)
  CRITIC_WORKER_METRICS_ADDR  /metrics and /healthz of this worker, or off
  GOMLX_BACKEND            the ML backend (e.g. xla:<PJRT plugin .so> on a GPU)

A base_model given as a local directory path must exist at that path on every
worker; a hub id (Qwen/Qwen3-0.6B) is downloaded into CRITIC_DATA_DIR/models.
`

// workerObserver is the worker's job observer: metrics and spans, or none.
func workerObserver(tel *telemetry.Telemetry) worker.Observer {
	if tel == nil {
		return nil
	}
	return tel
}

// serveWorkerMetrics serves the worker's own /metrics and /healthz on addr
// (CRITIC_WORKER_METRICS_ADDR): a worker has no API port to share.
func serveWorkerMetrics(addr string, tel *telemetry.Telemetry) (string, func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("CRITIC_WORKER_METRICS_ADDR %s: %w (set another address, or off)", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", tel.Metrics.Handler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}` + "\n"))
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return ln.Addr().String(), func() { _ = srv.Close() }, nil
}

// workerConfigFromEnv reads the worker's own variables: CRITIC_API_URL,
// CRITIC_WORKER_TOKEN (or $CRITIC_DATA_DIR/worker_token, which the API writes on
// a single machine), CRITIC_WORKER_ID (default hostname-pid); KAFKA_BROKERS is
// required because a standalone worker has no embedded broker to fall back on.
func workerConfigFromEnv(cfg config) (worker.Config, error) {
	wc := worker.Config{APIURL: strings.TrimRight(strings.TrimSpace(os.Getenv("CRITIC_API_URL")), "/"),
		Brokers: cfg.KafkaBrokers, DataDir: cfg.DataDir}
	var errs []error
	if wc.APIURL == "" {
		errs = append(errs, errors.New("CRITIC_API_URL is required: the API's base URL, e.g. http://127.0.0.1:8080"))
	} else if !strings.HasPrefix(wc.APIURL, "http://") && !strings.HasPrefix(wc.APIURL, "https://") {
		errs = append(errs, fmt.Errorf("CRITIC_API_URL: %q is not an http(s) URL", wc.APIURL))
	}
	wc.Token = strings.TrimSpace(os.Getenv("CRITIC_WORKER_TOKEN"))
	if wc.Token == "" {
		path := filepath.Join(cfg.DataDir, "worker_token")
		data, err := os.ReadFile(path)
		switch {
		case err == nil && strings.TrimSpace(string(data)) != "":
			wc.Token = strings.TrimSpace(string(data))
		case err == nil || os.IsNotExist(err):
			errs = append(errs, fmt.Errorf("CRITIC_WORKER_TOKEN is required (or a token in %s, which the API writes on a single machine)", path))
		default:
			errs = append(errs, fmt.Errorf("CRITIC_WORKER_TOKEN is unset and %s is unreadable: %v", path, err))
		}
	}
	if len(wc.Brokers) == 0 {
		errs = append(errs, errors.New("KAFKA_BROKERS is required for a standalone worker (comma-separated host:port)"))
	}
	wc.WorkerID = strings.TrimSpace(os.Getenv("CRITIC_WORKER_ID"))
	if wc.WorkerID == "" {
		host, err := os.Hostname()
		if err != nil || host == "" {
			host = "worker"
		}
		wc.WorkerID = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	return wc, errors.Join(errs...)
}
