package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/platform/eventstore"
	"github.com/criticml/critic/platform/keyring"
	"github.com/criticml/critic/platform/pg"
)

// infra is the infrastructure every command shares: the database (local or
// DATABASE_URL), the blob store and the event store.
type infra struct {
	cfg     config
	pool    *pgxpool.Pool
	blobs   blob.Store
	store   *eventstore.Store
	cluster *pg.Cluster // the local cluster, when we use one
	log     *slog.Logger
	// localWorker: this process runs the in-process worker (`critic run`),
	// so new models say compute "local"; otherwise "worker".
	localWorker bool
}

// openInfra connects to the database, starting the local cluster when
// DATABASE_URL is unset, and migrates it.
func openInfra(ctx context.Context, cfg config, log *slog.Logger) (*infra, error) {
	in := &infra{cfg: cfg, log: log}
	url := cfg.DatabaseURL
	if url == "" {
		c := pg.Cluster{Dir: filepath.Join(cfg.DataDir, "pg"), Port: cfg.PGPort}
		log.Info("DATABASE_URL is unset: using the local PostgreSQL cluster", "dir", c.Dir, "port", c.Port)
		if err := c.Ensure(ctx); err != nil {
			return nil, err
		}
		if err := c.CreateDatabase(ctx, "critic"); err != nil {
			return nil, err
		}
		in.cluster = &c
		url = c.URL("critic")
	}
	pool, err := pg.Connect(ctx, url)
	if err != nil {
		return nil, err
	}
	if err := pg.Migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	in.pool = pool
	if err := in.openBlobs(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	var opts []eventstore.Option
	if cfg.Encryption {
		ring, err := openKeyring(ctx, cfg, pool)
		if err != nil {
			pool.Close()
			return nil, err
		}
		opts = append(opts, eventstore.WithKeyring(ring))
	}
	in.store = eventstore.New(pool, in.blobs, opts...)
	return in, nil
}

// openKeyring reads the master key: CRITIC_MASTER_KEY_FILE, which must
// exist when set (a missing mounted secret must not become a fresh key that
// opens nothing), else DataDir/master_key, created on first start like the
// worker token.
func openKeyring(ctx context.Context, cfg config, pool *pgxpool.Pool) (*keyring.Ring, error) {
	var master []byte
	var err error
	if cfg.MasterKeyFile != "" {
		master, err = keyring.ReadMasterKey(cfg.MasterKeyFile)
	} else {
		master, err = keyring.CreateMasterKeyFile(defaultMasterKeyFile(cfg))
	}
	if err != nil {
		return nil, err
	}
	ring, err := keyring.New(pool, master)
	if err != nil {
		return nil, err
	}
	// Refuse to start with a key other than the one the database recorded.
	if err := ring.CheckMaster(ctx); err != nil {
		return nil, err
	}
	return ring, nil
}

// defaultMasterKeyFile is where the master key lives when
// CRITIC_MASTER_KEY_FILE is unset.
func defaultMasterKeyFile(cfg config) string { return filepath.Join(cfg.DataDir, "master_key") }

// openBlobs opens the store BLOB_URL names: a local directory whose signed
// links point at this API (CRITIC_PUBLIC_URL; when unset, startServer sets
// the listen address once it is known), or a bucket reached with the
// standard AWS variables and S3_ENDPOINT.
func (in *infra) openBlobs(ctx context.Context) error {
	cfg := in.cfg
	loc, err := blob.ParseURL(cfg.BlobURL)
	if err != nil {
		return fmt.Errorf("BLOB_URL: %w", err)
	}
	switch loc.Scheme {
	case "file":
		var opts []blob.LocalOption
		if cfg.PublicURL != "" {
			opts = append(opts, blob.WithPublicURL(cfg.PublicURL))
		}
		if f := os.Getenv("CRITIC_BLOB_SIGNING_KEY_FILE"); f != "" {
			opts = append(opts, blob.WithSigningKeyFile(f))
		}
		l, err := blob.NewLocal(loc.Dir, opts...)
		if err != nil {
			return fmt.Errorf("BLOB_URL %s: %w", cfg.BlobURL, err)
		}
		in.blobs = l
	case "s3":
		s, err := blob.NewS3(ctx, blob.S3Config{Bucket: loc.Bucket, Prefix: loc.Prefix, Endpoint: cfg.S3Endpoint})
		if err != nil {
			return fmt.Errorf("BLOB_URL %s: %w", cfg.BlobURL, err)
		}
		in.blobs = s
		in.log.Info("blob store: S3", "bucket", loc.Bucket, "prefix", loc.Prefix, "endpoint", cfg.S3Endpoint)
	default:
		return fmt.Errorf("BLOB_URL: unsupported scheme %q", loc.Scheme)
	}
	return nil
}

func (in *infra) Close() { in.pool.Close() }

// boot reads the configuration and opens the infrastructure: what every
// command that touches the database starts with.
func boot(ctx context.Context) (*infra, error) {
	cfg, err := loadConfig()
	if err != nil {
		return nil, err
	}
	return openInfra(ctx, cfg, newLogger())
}
