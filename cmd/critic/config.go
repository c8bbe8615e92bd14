package main

import (
	"cmp"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/platform/duck"

	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/gpuworker/hub"
	"github.com/criticml/critic/handlers/apiserver"
	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/platform/egress"
	"github.com/criticml/critic/platform/instance"
	jobdispatch "github.com/criticml/critic/projections/dispatch"
)

// config is read once from the environment; every default is embedded so a
// fresh machine needs no settings.
type config struct {
	DatabaseURL  string   // DATABASE_URL; empty → a local cluster under DataDir/pg
	KafkaBrokers []string // KAFKA_BROKERS; empty → the embedded broker
	KafkaPort    int      // CRITIC_KAFKA_PORT for the embedded broker (default 19092; 0 = any)
	BlobURL      string   // BLOB_URL: file:///dir (default file://<DataDir>/blobs) or s3://bucket/prefix
	S3Endpoint   string   // S3_ENDPOINT for S3-compatible stores (path-style); credentials/region from the AWS_* variables
	PublicURL    string   // CRITIC_PUBLIC_URL: base of local signed download links; empty → http://<listen address>
	DataDir      string   // CRITIC_DATA_DIR; default .data
	Addr         string   // CRITIC_ADDR; default 127.0.0.1:8080
	PGPort       int      // CRITIC_PG_PORT for the local cluster (default 5439)
	MaxBody      int64    // CRITIC_MAX_BODY_BYTES; default 64 MiB
	// OTLPCacheMemory is CRITIC_OTLP_CACHE_MEMORY: what the live OTLP
	// receiver may keep of the conversations it wrote lately, folded and
	// decoded, between exports (default commands.DefaultOTLPCache; 0 keeps
	// nothing).
	OTLPCacheMemory int64
	PProfAddr       string        // CRITIC_PPROF_ADDR: loopback-only /debug/pprof listener, never the API port; "" → off (CRITIC_PPROF=1 → 127.0.0.1:6060)
	WorkerLease     time.Duration // CRITIC_WORKER_LEASE: how long a job claim lives without a heartbeat (default 30s)
	// RetentionInterval is CRITIC_RETENTION_INTERVAL: how often the API
	// erases the traces older than their account's retention period
	// (default 24h).
	RetentionInterval time.Duration
	// BackgroundScoring is CRITIC_BACKGROUND_SCORING (on, the default, or
	// off): ready models score their owners' traces without a request
	// (spec 001 "Learned action credit"); ScoringDebounce is
	// CRITIC_SCORING_DEBOUNCE, the idle time before a new or changed trace
	// is scored (default 30s).
	BackgroundScoring bool
	ScoringDebounce   time.Duration
	// QueryIsolation is CRITIC_QUERY_ISOLATION: "replica" (default: a
	// per-account locked-down in-memory copy, fresh connection per query) or
	// "copy" (a brand-new in-memory DuckDB per query, ~10× slower on large
	// accounts).
	QueryIsolation duck.LoadMode
	// QueryLimits are the CRITIC_QUERY_* bounds of POST /query
	// (loadQueryLimits).
	QueryLimits duck.Options
	// QueryProcess is CRITIC_QUERY_PROCESS{,_MEMORY} (queryProcess).
	QueryProcess apiserver.QueryProcess
	// InstanceID is CRITIC_INSTANCE_ID: each API instance builds its own
	// query snapshots under its own consumer group, so ids must differ
	// between live instances (a second start with a live id is refused).
	// Empty → the id generated once into DataDir/instance-id (resolved by
	// serve and run, see instanceID).
	InstanceID string
	// QueryWait is CRITIC_QUERY_WAIT: how long POST /query waits for this
	// instance's snapshot to reach the caller's last write before answering
	// 503 snapshot_catching_up (default 2s; 0 answers at once).
	QueryWait time.Duration
	// Metrics is CRITIC_METRICS: on (default) registers the Prometheus
	// metrics and serves /metrics; off records nothing (benchmarks compare).
	Metrics bool
	// MetricsAddr is CRITIC_METRICS_ADDR: when set, /metrics is served only
	// there, not on CRITIC_ADDR.
	MetricsAddr string
	// WorkerMetricsAddr is CRITIC_WORKER_METRICS_ADDR: where `critic worker`
	// serves its /metrics and /healthz (default 127.0.0.1:9464; off = none).
	WorkerMetricsAddr string
	// ReadyMaxLag is CRITIC_READY_MAX_LAG: how many events the read model
	// may be behind before /readyz answers 503 (default 1000).
	ReadyMaxLag int
	// HTTP is CRITIC_HTTP_{READ_HEADER,READ,WRITE,IDLE}_TIMEOUT: how long a
	// client may stall a request's headers, its whole body, a response's
	// progress, or an idle keep-alive connection.
	HTTP apiserver.Timeouts
	// LLM is the model roles (cmd/critic/llm.go).
	LLM llmRoles
	// ModelRoots is where a tenant's local base_model may lie: DataDir/models
	// (the demo base, the hub cache) and the absolute directories of
	// CRITIC_MODEL_ROOTS. Workers apply the same rule on their own side.
	ModelRoots []string

	// Encryption (CRITIC_ENCRYPTION, default on) seals trace payloads with
	// per-trace data keys wrapped by the master key in MasterKeyFile
	// (CRITIC_MASTER_KEY_FILE; default DataDir/master_key, created on first
	// start). Off stores payloads in clear, as before (benchmarks compare).
	Encryption    bool
	MasterKeyFile string
}

func loadConfig() (config, error) {
	c := config{
		DatabaseURL:     os.Getenv("DATABASE_URL"),
		DataDir:         cmp.Or(os.Getenv("CRITIC_DATA_DIR"), ".data"),
		Addr:            cmp.Or(os.Getenv("CRITIC_ADDR"), "127.0.0.1:8080"),
		BlobURL:         os.Getenv("BLOB_URL"),
		S3Endpoint:      os.Getenv("S3_ENDPOINT"),
		MaxBody:         64 << 20,
		OTLPCacheMemory: commands.DefaultOTLPCache,
		KafkaPort:       19092,
		PGPort:          5439,
		PProfAddr:       os.Getenv("CRITIC_PPROF_ADDR"),
		PublicURL:       os.Getenv("CRITIC_PUBLIC_URL"),
	}
	for b := range strings.SplitSeq(os.Getenv("KAFKA_BROKERS"), ",") {
		if b = strings.TrimSpace(b); b != "" {
			c.KafkaBrokers = append(c.KafkaBrokers, b)
		}
	}
	var err error
	switch v := os.Getenv("CRITIC_QUERY_ISOLATION"); v {
	case "", "replica":
		c.QueryIsolation = duck.LoadReplica
	case "copy":
		c.QueryIsolation = duck.LoadCopy
	default:
		return c, fmt.Errorf("CRITIC_QUERY_ISOLATION must be replica or copy, got %q", v)
	}
	switch v := strings.ToLower(os.Getenv("CRITIC_METRICS")); v {
	case "", "on", "1", "true":
		c.Metrics = true
	case "off", "0", "false":
	default:
		return c, fmt.Errorf("CRITIC_METRICS must be on or off, got %q", v)
	}
	c.MetricsAddr = os.Getenv("CRITIC_METRICS_ADDR")
	c.WorkerMetricsAddr = cmp.Or(os.Getenv("CRITIC_WORKER_METRICS_ADDR"), "127.0.0.1:9464")
	if c.ReadyMaxLag, err = envPositiveInt("CRITIC_READY_MAX_LAG", 1000); err != nil {
		return c, err
	}
	if c.PProfAddr == "" && os.Getenv("CRITIC_PPROF") == "1" {
		c.PProfAddr = defaultPProfAddr
	}
	c.InstanceID = os.Getenv("CRITIC_INSTANCE_ID")
	if c.InstanceID != "" {
		if err := instance.Validate(c.InstanceID); err != nil {
			return c, err
		}
	}
	if v := os.Getenv("CRITIC_QUERY_WAIT"); v != "" {
		if c.QueryWait, err = time.ParseDuration(v); err != nil || c.QueryWait < 0 {
			return c, fmt.Errorf("CRITIC_QUERY_WAIT must be a duration such as 2s (0 answers at once), got %q", v)
		}
		if c.QueryWait == 0 {
			c.QueryWait = -1 // apiserver: negative is "do not wait"
		}
	}
	if c.QueryLimits, err = loadQueryLimits(); err != nil {
		return c, err
	}
	if c.QueryProcess, err = queryProcess(c.QueryLimits); err != nil {
		return c, err
	}
	if c.LLM, err = loadLLMRoles(); err != nil {
		return c, err
	}
	switch v := os.Getenv("CRITIC_BACKGROUND_SCORING"); v {
	case "", "on":
		c.BackgroundScoring = true
	case "off":
	default:
		return c, fmt.Errorf("CRITIC_BACKGROUND_SCORING must be on or off, got %q", v)
	}
	c.ScoringDebounce = jobdispatch.DefaultScoringDebounce
	if v := os.Getenv("CRITIC_SCORING_DEBOUNCE"); v != "" {
		if c.ScoringDebounce, err = time.ParseDuration(v); err != nil || c.ScoringDebounce < 0 {
			return c, fmt.Errorf("CRITIC_SCORING_DEBOUNCE must be a duration (e.g. 30s), got %q", v)
		}
	}
	c.WorkerLease, c.RetentionInterval = 30*time.Second, 24*time.Hour
	for _, d := range []struct {
		name, example string
		dst           *time.Duration
	}{{"CRITIC_WORKER_LEASE", "30s", &c.WorkerLease}, {"CRITIC_RETENTION_INTERVAL", "24h", &c.RetentionInterval},
		{"CRITIC_HTTP_READ_HEADER_TIMEOUT", "5m", &c.HTTP.ReadHeader}, {"CRITIC_HTTP_READ_TIMEOUT", "5m", &c.HTTP.Read},
		{"CRITIC_HTTP_WRITE_TIMEOUT", "5m", &c.HTTP.Write}, {"CRITIC_HTTP_IDLE_TIMEOUT", "5m", &c.HTTP.Idle}} {
		if v := os.Getenv(d.name); v != "" {
			if *d.dst, err = time.ParseDuration(v); err != nil || *d.dst < time.Second {
				return c, fmt.Errorf("%s must be a duration of at least 1s (e.g. %s), got %q", d.name, d.example, v)
			}
		}
	}
	if c.KafkaPort, err = envInt("CRITIC_KAFKA_PORT", c.KafkaPort); err != nil {
		return c, err
	}
	if c.PGPort, err = envInt("CRITIC_PG_PORT", c.PGPort); err != nil {
		return c, err
	}
	mb, err := envInt("CRITIC_MAX_BODY_BYTES", int(c.MaxBody))
	if err != nil {
		return c, err
	}
	c.MaxBody = int64(mb)
	if v := os.Getenv("CRITIC_OTLP_CACHE_MEMORY"); v != "" {
		if c.OTLPCacheMemory, err = parseSize(v); err != nil || c.OTLPCacheMemory < 0 {
			return c, fmt.Errorf("CRITIC_OTLP_CACHE_MEMORY must be a size in bytes, optionally with KiB, MiB or GiB (such as 512MiB; 0 keeps nothing), got %q", v)
		}
	}
	if abs, err := filepath.Abs(c.DataDir); err == nil {
		c.DataDir = abs
	}
	c.BlobURL = cmp.Or(c.BlobURL, "file://"+filepath.Join(c.DataDir, "blobs"))
	switch v := strings.ToLower(os.Getenv("CRITIC_ENCRYPTION")); v {
	case "", "on":
		c.Encryption = true
	case "off":
	default:
		return c, fmt.Errorf("CRITIC_ENCRYPTION: want on or off, got %q", v)
	}
	c.MasterKeyFile = os.Getenv("CRITIC_MASTER_KEY_FILE")
	roots, err := rewardmodels.ParseModelRoots(os.Getenv(rewardmodels.EnvModelRoots))
	if err != nil {
		return c, err
	}
	c.ModelRoots = append([]string{filepath.Join(c.DataDir, "models")}, roots...)
	// Read by the workers at each GEPA job; a bad list fails here, at start.
	if _, err := egress.Parse(os.Getenv(egress.EnvAllowedAPIBases)); err != nil {
		return c, err
	}
	// Read by the workers' hub (which ids HF_TOKEN is sent for).
	if _, err := hub.ParseTokenModels(os.Getenv(hub.EnvTokenModels)); err != nil {
		return c, err
	}
	return c, c.Validate()
}

// Validate fails at start with a message naming the variable.
func (c config) Validate() error {
	if _, err := blob.ParseURL(c.BlobURL); err != nil {
		return fmt.Errorf("BLOB_URL: %v", err)
	}
	for _, v := range []struct{ name, url string }{{"CRITIC_PUBLIC_URL", c.PublicURL}, {"S3_ENDPOINT", c.S3Endpoint}} {
		if u, err := url.Parse(v.url); v.url != "" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
			return fmt.Errorf("%s: %q is not an absolute http(s) URL", v.name, v.url)
		}
	}
	if c.MaxBody <= 0 {
		return fmt.Errorf("CRITIC_MAX_BODY_BYTES must be positive")
	}
	if err := checkHostPort(c.Addr); err != nil {
		return fmt.Errorf("CRITIC_ADDR: %v", err)
	}
	if c.MetricsAddr != "" {
		if err := checkHostPort(c.MetricsAddr); err != nil {
			return fmt.Errorf("CRITIC_METRICS_ADDR: %v", err)
		}
	}
	if c.WorkerMetricsAddr != "off" {
		if err := checkHostPort(c.WorkerMetricsAddr); err != nil {
			return fmt.Errorf("CRITIC_WORKER_METRICS_ADDR: %v (or off)", err)
		}
	}
	if c.PProfAddr != "" {
		if err := checkLoopback(c.PProfAddr); err != nil {
			return fmt.Errorf("CRITIC_PPROF_ADDR: %v", err)
		}
	}
	return nil
}

func envInt(k string, def int) (int, error) {
	v := os.Getenv(k)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("%s must be an integer, got %q", k, v)
	}
	return n, nil
}

// envPositiveInt is envInt for a count that must be at least 1.
func envPositiveInt(k string, def int) (int, error) {
	n, err := envInt(k, def)
	if err == nil && n < 1 {
		err = fmt.Errorf("%s must be at least 1, got %d", k, n)
	}
	return n, err
}

// checkHostPort fails unless addr ends in :PORT.
func checkHostPort(addr string) error {
	i := strings.LastIndexByte(addr, ':')
	if _, err := strconv.Atoi(addr[i+1:]); i < 0 || err != nil {
		return fmt.Errorf("%q is not host:port", addr)
	}
	return nil
}
