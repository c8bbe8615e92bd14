package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/platform/eventstore"
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
	blobs, err := blob.NewLocal(strings.TrimPrefix(cfg.BlobURL, "file://"))
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("BLOB_URL: %w", err)
	}
	in.blobs = blobs
	in.store = eventstore.New(pool, blobs)
	return in, nil
}

func (in *infra) Close() { in.pool.Close() }
