package apiserver

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/criticml/critic/handlers/queryhost"
	"github.com/criticml/critic/handlers/usecase"
	"github.com/criticml/critic/platform/duck"
	"github.com/criticml/critic/projections"
	"github.com/criticml/critic/projections/snapshot"
)

// QueryProcess runs the query snapshots in a child process (see
// handlers/queryhost for why).
type QueryProcess struct {
	// Command starts the child (the server's own executable and
	// `query-host`); empty keeps the snapshots in this process.
	Command []string
	// MemoryLimit is the child's RLIMIT_DATA in bytes (0: none).
	MemoryLimit int64
}

// openSnapshots opens the query snapshots in this process or starts the
// query process, and returns what answers queries and what applies the
// snapshot projection's batches.
func (s *Server) openSnapshots(ctx context.Context, cfg Config, deps Deps, log *slog.Logger) (usecase.Snapshots, projections.Applier, error) {
	if len(cfg.QueryProcess.Command) == 0 {
		snaps, err := duck.New(cfg.SnapshotDir, cfg.Query)
		if err != nil {
			return nil, nil, fmt.Errorf("query snapshots in %s: %w", cfg.SnapshotDir, err)
		}
		s.Snapshots = snaps
		return snaps, snapshot.New(snaps, deps.Blobs, log), nil
	}
	proc, err := queryhost.Start(ctx, queryhost.ProcessOptions{
		Command: cfg.QueryProcess.Command, Dir: cfg.SnapshotDir, Options: cfg.Query,
		MemoryLimit: cfg.QueryProcess.MemoryLimit, Blobs: deps.Blobs, Log: log,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("query snapshots in %s: %w", cfg.SnapshotDir, err)
	}
	s.queryProc = proc
	return proc, proc, nil
}
