package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/criticml/critic/platform/duck"
	"github.com/criticml/critic/projections/readmodel"
	"github.com/criticml/critic/projections/snapshot"
)

const replayUsage = "usage: critic replay readmodel|snapshot"

// cmdReplay rebuilds a projection from the event log.
func cmdReplay(ctx context.Context, args []string) error {
	if len(args) != 1 || (args[0] != "readmodel" && args[0] != "snapshot") {
		return usageError{replayUsage}
	}
	in, err := boot(ctx)
	if err != nil {
		return err
	}
	cfg, log := in.cfg, in.log
	defer in.Close()
	start := time.Now()
	switch args[0] {
	case "snapshot":
		// The snapshot files belong to one process; a running server holds
		// them, so this refuses rather than corrupting them.
		dir := filepath.Join(cfg.DataDir, "snapshots")
		n, err := snapshot.Replay(ctx, dir, in.store, log)
		if errors.Is(err, duck.ErrLocked) {
			return fmt.Errorf("%w; stop `critic serve`/`critic run` using CRITIC_DATA_DIR=%s, replay, then start it again", err, cfg.DataDir)
		}
		if err != nil {
			return err
		}
		fmt.Printf("query snapshots rebuilt from %d events in %s\n", n, time.Since(start).Round(time.Millisecond))
	default:
		n, err := readmodel.New(in.pool, in.blobs, log).WithKeyring(in.store.Keyring()).Replay(ctx, in.store)
		if err != nil {
			return err
		}
		fmt.Printf("read model rebuilt from %d events in %s\n", n, time.Since(start).Round(time.Millisecond))
	}
	return nil
}
