package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/handlers"
	"github.com/criticml/critic/handlers/rest"
	"github.com/criticml/critic/platform/bus"
	"github.com/criticml/critic/platform/relay"
	"github.com/criticml/critic/projections"
	"github.com/criticml/critic/projections/readmodel"
)

func newLogger() *slog.Logger {
	level := slog.LevelInfo
	if os.Getenv("CRITIC_LOG_LEVEL") == "debug" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// cmdServe runs the API with its relay and projections until interrupted.
func cmdServe(ctx context.Context, _ []string) error {
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
	srv, err := startServer(ctx, in)
	if err != nil {
		return err
	}
	fmt.Printf("Critic API listening on http://%s\n", srv.addr)
	<-ctx.Done()
	return srv.shutdown()
}

// server is the running API process: HTTP, relay, projections and (when
// KAFKA_BROKERS is unset) the embedded broker.
type server struct {
	addr     string
	http     *http.Server
	cmds     *commands.Commands
	queries  *readmodel.Queries
	waiter   *readmodel.Waiter
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	closers  []func() error
	log      *slog.Logger
	shutOnce sync.Once
}

func startServer(parent context.Context, in *infra) (*server, error) {
	cfg, log := in.cfg, in.log
	ctx, cancel := context.WithCancel(context.WithoutCancel(parent))
	s := &server{cancel: cancel, log: log}
	fail := func(err error) (*server, error) {
		_ = s.shutdown()
		return nil, err
	}

	brokers := cfg.KafkaBrokers
	if len(brokers) == 0 {
		emb, err := bus.StartEmbedded(ctx, bus.EmbeddedConfig{DataDir: filepath.Join(cfg.DataDir, "kafka"), Port: cfg.KafkaPort})
		if err != nil {
			return fail(fmt.Errorf("start the embedded Kafka broker (set KAFKA_BROKERS to use your own): %w", err))
		}
		s.closers = append(s.closers, emb.Close)
		brokers = emb.Addrs()
		log.Info("KAFKA_BROKERS is unset: using the embedded broker", "addr", brokers, "dir", filepath.Join(cfg.DataDir, "kafka"))
	}
	wlog := watermill.NewSlogLogger(log)
	pub, err := bus.NewPublisher(bus.Config{Brokers: brokers}, wlog)
	if err != nil {
		return fail(err)
	}
	s.closers = append([]func() error{pub.Close}, s.closers...)
	sub, err := bus.NewSubscriber(bus.Config{Brokers: brokers, ConsumerGroup: readmodel.Name}, wlog)
	if err != nil {
		return fail(err)
	}
	s.closers = append([]func() error{sub.Close}, s.closers...)

	s.cmds = commands.New(in.store)
	s.queries = readmodel.NewQueries(in.pool)
	s.waiter = readmodel.NewWaiter(in.pool, 5*time.Second)
	proj := readmodel.New(in.pool, in.blobs, log)

	s.goRun("relay", func() error { return relay.New("kafka", in.store, pub, log).Run(ctx) })
	s.goRun("readmodel", func() error {
		return projections.Run(ctx, func(ctx context.Context, topic string, n int, wait time.Duration, h func(context.Context, []*watermillMessage) error) error {
			return sub.ConsumeBatches(ctx, topic, n, wait, h)
		}, relay.Topic, proj)
	})
	s.goRun("waiter", func() error { s.waiter.Listen(ctx); return nil })

	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		handlers.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	auth := handlers.NewAuthenticator(s.queries)
	rest.New(s.cmds, s.queries, s.waiter, auth, cfg.MaxBody).Register(mux)
	registerConnect(mux, s, auth, cfg.MaxBody)

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fail(fmt.Errorf("CRITIC_ADDR %s: %w", cfg.Addr, err))
	}
	s.addr = ln.Addr().String()
	s.http = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	// gRPC clients speak HTTP/2 without TLS (h2c) on the same port as REST.
	s.http.Protocols = new(http.Protocols)
	s.http.Protocols.SetHTTP1(true)
	s.http.Protocols.SetUnencryptedHTTP2(true)
	s.goRun("http", func() error {
		if err := s.http.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	return s, nil
}

func (s *server) goRun(name string, fn func() error) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := fn(); err != nil && !errors.Is(err, context.Canceled) {
			s.log.Error(name+" stopped", "err", err)
		}
	}()
}

// shutdown stops accepting requests, lets in-flight ones finish, then stops
// the background loops and the broker.
func (s *server) shutdown() error {
	s.shutOnce.Do(func() {
		if s.http != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_ = s.http.Shutdown(ctx)
			cancel()
		}
		s.cancel()
		for _, c := range s.closers {
			_ = c()
		}
		s.wg.Wait()
	})
	return nil
}
