package main

import (
	"context"
	"fmt"
	"time"

	"github.com/criticml/critic/projections/readmodel"
)

// cmdReplay rebuilds a projection from the event log.
func cmdReplay(ctx context.Context, args []string) error {
	if len(args) != 1 || args[0] != "readmodel" {
		return usageError{"usage: critic replay readmodel"}
	}
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	log := newLogger()
	in, err := openInfra(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer in.Close()
	start := time.Now()
	n, err := readmodel.New(in.pool, in.blobs, log).Replay(ctx, in.store)
	if err != nil {
		return err
	}
	fmt.Printf("read model rebuilt from %d events in %s\n", n, time.Since(start).Round(time.Millisecond))
	return nil
}
