package bus

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
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

	// Listen, when set, is the host:port to listen on instead (any
	// interface, e.g. 0.0.0.0:9092, for clients on other machines); it
	// overrides Port.
	Listen string
	// Advertise is the host:port clients are told to connect to (Kafka
	// clients reconnect to the address the broker advertises, not the one
	// they bootstrapped with). Default: Listen, with a wildcard host
	// replaced by the machine's host name.
	Advertise string

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
	if cfg.Listen != "" {
		fn, err := listenOn(cfg.Listen, cfg.Advertise)
		if err != nil {
			return nil, err
		}
		opts = append(opts, kfake.ListenFn(fn))
		cfg.Port = 1 // a fixed address: retry while it is still in use
	} else if cfg.Port != 0 {
		opts = append(opts, kfake.Ports(cfg.Port))
	}
	if cfg.SyncWrites {
		opts = append(opts, kfake.SyncWrites())
	}
	unlock := func() {}
	if cfg.DataDir != "" {
		opts = append(opts, kfake.DataDir(cfg.DataDir))
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
func (e *Embedded) Addrs() []string { return slices.Clone(e.addrs) }

// Close stops the broker, persisting its state to DataDir first. Clients
// connected to it see their connections drop.
func (e *Embedded) Close() error {
	e.cluster.Close()
	e.unlock()
	return nil
}

// listenOn returns a kfake listen function that binds listen (instead of
// kfake's fixed 127.0.0.1) and reports advertise as the listener's address,
// which is what the broker tells clients in its metadata.
func listenOn(listen, advertise string) (func(network, address string) (net.Listener, error), error) {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return nil, fmt.Errorf("bus: broker listen address %q: want host:port, e.g. 0.0.0.0:9092", listen)
	}
	if advertise != "" {
		if _, _, err := net.SplitHostPort(advertise); err != nil {
			return nil, fmt.Errorf("bus: broker advertised address %q: want host:port", advertise)
		}
	}
	advHost := host
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		if advHost, err = os.Hostname(); err != nil && advertise == "" {
			return nil, fmt.Errorf("bus: broker listens on every interface and the host name is unknown: give an advertised address: %w", err)
		}
	}
	return func(network, _ string) (net.Listener, error) {
		ln, err := net.Listen(network, listen)
		if err != nil {
			return nil, err
		}
		adv := advertise
		if adv == "" {
			_, port, _ := net.SplitHostPort(ln.Addr().String())
			adv = net.JoinHostPort(advHost, port)
		}
		return advertised{Listener: ln, addr: advertisedAddr(adv)}, nil
	}, nil
}

// advertised is a listener that reports the address clients should use.
type advertised struct {
	net.Listener
	addr net.Addr
}

func (a advertised) Addr() net.Addr { return a.addr }

// advertisedAddr is a host:port as a net.Addr (the host may be a name).
type advertisedAddr string

func (a advertisedAddr) Network() string { return "tcp" }
func (a advertisedAddr) String() string  { return string(a) }

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
