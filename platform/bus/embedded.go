package bus

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// EmbeddedConfig configures the in-process broker that replaces Kafka on a
// single machine (KAFKA_BROKERS unset).
type EmbeddedConfig struct {
	// DataDir is where the broker keeps its log segments and state (topics,
	// committed group offsets). Restarting on the same DataDir resumes where
	// the previous run stopped. Empty keeps everything in memory, for tests
	// that do not care about restarts.
	DataDir string

	// Port to listen on at 127.0.0.1; 0 picks a free one. Clients cache
	// broker addresses, so a broker that restarts while clients live must
	// come back on the same port.
	Port int

	// SyncWrites fsyncs every produced batch before acknowledging it.
	// Without it (Kafka's default too) a machine crash may lose the last
	// acknowledged batches; a process crash loses nothing.
	SyncWrites bool
}

// Embedded is a running in-process Kafka-protocol broker (franz-go kfake,
// one node). It exists so that the single-machine deployment and the tests
// exercise the same Kafka code path as production, without a JVM.
type Embedded struct {
	cluster *kfake.Cluster
	addrs   []string
	unlock  func()
}

// StartEmbedded starts the broker and returns once it accepts connections.
// ctx bounds only the start-up; the broker runs until Close.
func StartEmbedded(ctx context.Context, cfg EmbeddedConfig) (*Embedded, error) {
	if cfg.Port < 0 || cfg.Port > 65535 {
		return nil, fmt.Errorf("bus: embedded broker port %d out of range", cfg.Port)
	}
	opts := []kfake.Opt{
		kfake.NumBrokers(1),
		kfake.ClusterID("critic"),
		// Matches our client's default, for topics created by other tools.
		kfake.DefaultNumPartitions(DefaultTopicPartitions),
	}
	if cfg.Port != 0 {
		opts = append(opts, kfake.Ports(cfg.Port))
	}
	if cfg.DataDir != "" {
		opts = append(opts, kfake.DataDir(cfg.DataDir))
	}
	if cfg.SyncWrites {
		opts = append(opts, kfake.SyncWrites())
	}
	unlock := func() {}
	if cfg.DataDir != "" {
		var err error
		if unlock, err = lockDataDir(cfg.DataDir); err != nil {
			return nil, err
		}
	}
	// The port of a broker that just closed can take a moment to become
	// bindable again; retry for a few seconds within ctx.
	var (
		cluster *kfake.Cluster
		err     error
	)
	for giveUp := time.Now().Add(5 * time.Second); ; {
		cluster, err = kfake.NewCluster(opts...)
		if err == nil || cfg.Port == 0 || !isListenError(err) || time.Now().After(giveUp) {
			break
		}
		if !sleepCtx(ctx, 50*time.Millisecond) {
			break
		}
	}
	if err != nil {
		unlock()
		return nil, fmt.Errorf("bus: start embedded broker: %w", err)
	}
	e := &Embedded{cluster: cluster, addrs: cluster.ListenAddrs(), unlock: sync.OnceFunc(unlock)}
	for _, addr := range e.addrs {
		if err := waitListening(ctx, addr); err != nil {
			_ = e.Close()
			return nil, err
		}
	}
	return e, nil
}

// Addrs returns the broker's host:port addresses, to use as Config.Brokers.
func (e *Embedded) Addrs() []string {
	return append([]string(nil), e.addrs...)
}

// Close stops the broker, persisting its state to DataDir first. Clients
// connected to it see their connections drop.
func (e *Embedded) Close() error {
	e.cluster.Close()
	e.unlock()
	return nil
}

func isListenError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "listen"
}

func waitListening(ctx context.Context, addr string) error {
	var d net.Dialer
	for {
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			return conn.Close()
		}
		if !sleepCtx(ctx, 20*time.Millisecond) {
			return fmt.Errorf("bus: embedded broker at %s not reachable: %w", addr, err)
		}
	}
}
