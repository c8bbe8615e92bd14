package apiserver

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/ThreeDotsLabs/watermill"

	"github.com/criticml/critic/handlers/queryhost"
	"github.com/criticml/critic/handlers/usecase"
	"github.com/criticml/critic/platform/bus"
	"github.com/criticml/critic/platform/duck"
	"github.com/criticml/critic/platform/relay"
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
		return snaps, snapshot.New(snaps, deps.Blobs, log).WithKeyring(deps.Store.Keyring()), nil
	}
	proc, err := queryhost.Start(ctx, queryhost.ProcessOptions{
		Command: cfg.QueryProcess.Command, Dir: cfg.SnapshotDir, Options: cfg.Query,
		MemoryLimit: cfg.QueryProcess.MemoryLimit, Blobs: deps.Blobs, Keys: deps.Store.Keyring(), Log: log,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("query snapshots in %s: %w", cfg.SnapshotDir, err)
	}
	s.queryProc = proc
	return proc, proc, nil
}

// SnapshotGather is how long the snapshot projection gathers events into
// one batch after the first: each batch is a DuckDB commit per owner, which
// costs far more than its rows, and with events arriving one append at a
// time (a worker reporting each scored trace) the commits were most of the
// query process's CPU (bench-score's background part: 4.9 s for 300 traces,
// a third of what the API's side of the pipeline used). SQL answers wait
// for the snapshot to reach the caller's last write (usecase.Query); such a
// query ends the gather at once (snapshot.Position.Hurry), so only batches
// nobody waits for gather the whole window.
const SnapshotGather = 100 * time.Millisecond

// startSnapshots opens the query snapshots and runs their projection: first
// straight from the event log up to its head at start, then from the bus,
// healing a position stuck behind an event the bus never delivered.
func (s *Server) startSnapshots(ctx context.Context, cfg Config, deps Deps, brokers []string, wlog watermill.LoggerAdapter) error {
	log := s.Log
	snaps, applier, err := s.openSnapshots(ctx, cfg, deps, log)
	if err != nil {
		return err
	}
	group := snapshot.Name
	if cfg.InstanceID != "" {
		group += "-" + cfg.InstanceID
	}
	pos, err := snapshot.OpenPosition(cfg.SnapshotDir, deps.Store.FirstAfter)
	if err != nil {
		return err
	}
	// A query waiting for the caller's last write ends the batch's gather.
	snapSub, err := bus.NewSubscriber(bus.Config{Brokers: brokers, ConsumerGroup: group, Logger: log, Hurry: pos.Hurry}, wlog)
	if err != nil {
		return err
	}
	s.closers = append([]func() error{snapSub.Close}, s.closers...)
	start, err := deps.Store.Head(ctx)
	if err != nil {
		return fmt.Errorf("read the event log head: %w", err)
	}
	s.snapPos, s.snapStart = pos, start
	gopts := cfg.Guard
	gopts.Gather = cmp.Or(gopts.Gather, SnapshotGather)
	guard := projections.NewGuard(group, deps.Pool, deps.Store, applier, log, gopts).Observe(snapshot.Name, s.Observer()).
		OnProcessed(pos.Processed)
	wait := cfg.QueryWait
	if wait < 0 {
		wait = time.Nanosecond
	}
	s.Query = usecase.NewQuery(snaps, pos, deps.Store, guard.Held, group, start, wait)
	log.Info("query snapshot: catching up with the event log", "group", group, "applied", pos.Applied(), "log_head", start,
		"position_recorded", pos.Known())
	s.goRun("snapshot", func() error {
		// First straight from the log up to its head at start (no
		// waiting for the consumer group to join), then from the bus.
		for {
			err := snapshot.CatchUp(ctx, deps.Store, guard.ApplyLog, pos, start)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return nil
			}
			log.Warn("query snapshot: catching up from the log failed; retrying", "err", err)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(time.Second):
			}
		}
		log.Info("query snapshot: caught up with the log as of start", "group", group, "applied", pos.Applied())
		// A position stuck behind an event the bus never delivered
		// reads that event from the log (the source of truth) itself.
		heal := func(ctx context.Context) error {
			head, err := deps.Store.Head(ctx)
			if err != nil {
				return err
			}
			return snapshot.CatchUp(ctx, deps.Store, guard.ApplyLog, pos, head)
		}
		s.goRun("snapshot-watch", func() error { watchPosition(ctx, log, group, pos, heal); return nil })
		return guard.Run(ctx, snapSub.ConsumeBatches, relay.Topic)
	})
	return nil
}
