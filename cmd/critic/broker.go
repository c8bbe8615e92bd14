package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/criticml/critic/platform/bus"
)

const brokerUsage = `usage: critic broker [--port N | --listen HOST:PORT] [--advertise HOST:PORT] [--data-dir DIR]

Runs the embedded Kafka-protocol broker on its own. By default it listens on
127.0.0.1:PORT (CRITIC_KAFKA_PORT, default 19092); --listen 0.0.0.0:9092
serves other machines, which connect to the address it advertises (--advertise,
default the listen address with 0.0.0.0 replaced by this host's name). Point
every process at it with KAFKA_BROKERS=HOST:PORT.`

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
	listen := fs.String("listen", "", "host:port to listen on instead of 127.0.0.1:PORT (e.g. 0.0.0.0:9092 for other machines)")
	advertise := fs.String("advertise", "", "host:port clients are told to connect to (default: --listen, with 0.0.0.0 replaced by the host name)")
	dir := fs.String("data-dir", filepath.Join(cfg.DataDir, "kafka"), "where the broker persists its log")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		return usageError{brokerUsage}
	}
	b, err := bus.StartEmbedded(ctx, bus.EmbeddedConfig{DataDir: *dir, Port: *port, Listen: *listen, Advertise: *advertise})
	if err != nil {
		return err
	}
	where := cmp.Or(*listen, fmt.Sprintf("127.0.0.1:%d", *port))
	fmt.Printf("Kafka-protocol broker listening on %s, advertised as %v (data in %s)\n", where, b.Addrs(), *dir)
	<-ctx.Done()
	return b.Close()
}
