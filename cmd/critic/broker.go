package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/criticml/critic/platform/bus"
)

// cmdBroker runs the embedded Kafka-protocol broker on its own, so several
// processes (API instances, workers) on one machine or in tests can share a
// broker that outlives them — or be stopped on purpose.
func cmdBroker(ctx context.Context, args []string) error {
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("broker", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	port := fs.Int("port", cfg.KafkaPort, "port to listen on at 127.0.0.1")
	dir := fs.String("data-dir", filepath.Join(cfg.DataDir, "kafka"), "where the broker persists its log")
	if err := fs.Parse(args); err != nil {
		return usageError{"usage: critic broker [--port N] [--data-dir DIR]"}
	}
	b, err := bus.StartEmbedded(ctx, bus.EmbeddedConfig{DataDir: *dir, Port: *port})
	if err != nil {
		return err
	}
	fmt.Printf("Kafka-protocol broker listening on %v (data in %s)\n", b.Addrs(), *dir)
	<-ctx.Done()
	return b.Close()
}
