package main

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/gpuworker/worker"
	"github.com/criticml/critic/projections/readmodel"
	"github.com/criticml/critic/web"
)

//go:embed samples/*.jsonl
var samples embed.FS

const demoUser = "demo"

// cmdRun starts the whole platform on one machine with embedded defaults: a
// local PostgreSQL cluster (unless DATABASE_URL is set), the embedded Kafka
// broker (unless KAFKA_BROKERS is set), the relay, the projections and the
// API; it creates the `demo` account, imports the sample traces once, and
// prints the URL and an API key. Ctrl-C stops everything, including the
// cluster it started. Running it again reuses the data.
func cmdRun(ctx context.Context, _ []string) error {
	in, err := boot(ctx)
	if err != nil {
		return err
	}
	cfg, log := in.cfg, in.log
	defer func() {
		in.Close()
		if in.cluster != nil {
			if err := in.cluster.Stop(); err != nil {
				log.Warn("stopping the local PostgreSQL cluster", "err", err)
			}
		}
	}()
	in.localWorker = true // the in-process worker below
	srv, err := startServer(ctx, in)
	if err != nil {
		return err
	}
	defer srv.shutdown()

	key, userID, err := ensureDemoUser(ctx, cfg, srv)
	if err != nil {
		return fmt.Errorf("create the demo account: %w", err)
	}
	n, fresh, err := importSamples(ctx, srv, userID)
	if err != nil {
		return fmt.Errorf("import the sample traces: %w", err)
	}
	if fresh {
		if err := rateSamples(ctx, srv, userID); err != nil {
			return fmt.Errorf("rate the sample traces: %w", err)
		}
	}
	// The in-process worker speaks the same protocol as `critic worker`:
	// Kafka for jobs, the worker service for reports, the blob store for data.
	srv.Go("worker", func() error {
		wc := worker.Config{APIURL: "http://" + srv.Addr, Token: srv.token, WorkerID: "local", Compute: rewardmodels.ComputeLocal,
			Brokers: srv.Brokers, Blobs: in.blobs, DataDir: cfg.DataDir, Log: log, Observer: workerObserver(srv.Telemetry)}
		cfg.LLM.workerModels(&wc, llmObserver(srv.Telemetry))
		return worker.Run(srv.Ctx, wc)
	}, nil)
	url := "http://" + srv.Addr
	// The key rides in the fragment, which browsers never send: the app
	// stores it and removes it from the address bar at once.
	app := url + "/#key=" + key
	if !web.Built() {
		app = url + "/   (the web app is not built into this binary: make web, then make build)"
	}
	fmt.Printf(`
Critic is running.

  Open:     %s
  API:      %s/api/v1/rm
  API key:  %s   (account %q; also saved in %s)
  Traces:   %d sample traces imported

Try:
  curl -s -H "Authorization: Bearer %s" %s/api/v1/rm/traces | jq

Press Ctrl-C to stop.
`, app, url, key, demoUser, filepath.Join(cfg.DataDir, "demo_api_key"), n, key, url)
	if err := startDemoTraining(ctx, cfg, srv, userID); err != nil {
		fmt.Printf("  (demo training skipped: %v)\n", err)
	}
	<-ctx.Done()
	fmt.Println("\nstopping…")
	return nil
}

// ensureDemoUser creates the demo account on the first run and keeps its key
// in the data directory (mode 0600) so later runs print the same key.
func ensureDemoUser(ctx context.Context, cfg config, srv *server) (key, userID string, err error) {
	keyFile := filepath.Join(cfg.DataDir, "demo_api_key")
	if b, err := os.ReadFile(keyFile); err == nil {
		key = strings.TrimSpace(string(b))
		if c, err := srv.Queries.CallerByKeyHash(ctx, commands.HashAPIKey(key)); err == nil {
			return key, c.UserID, nil
		}
	}
	res, err := srv.Cmds.CreateUser.Handle(ctx, commands.CreateUser{Name: demoUser})
	if _, ok := errors.AsType[*domain.ConflictError](err); ok {
		// The account exists but its saved key is gone: issue a new one.
		id, err := srv.Queries.UserIDByName(ctx, demoUser)
		if err != nil {
			return "", "", err
		}
		res, err = srv.Cmds.IssueAPIKey.Handle(ctx, commands.IssueAPIKey{UserID: id})
		if err != nil {
			return "", "", err
		}
	} else if err != nil {
		return "", "", err
	}
	if err := srv.Waiter.Wait(ctx, res.LastEventID); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(keyFile, []byte(res.APIKey+"\n"), 0o600); err != nil {
		return "", "", err
	}
	return res.APIKey, res.UserID, nil
}

// importSamples imports the bundled sample traces into an empty demo account
// (fresh reports that it did).
func importSamples(ctx context.Context, srv *server, userID string) (n int, fresh bool, err error) {
	_, total, err := srv.Queries.ListTraces(ctx, userID, readmodel.ListFilter{Limit: 1})
	if err != nil || total > 0 {
		return total, false, err
	}
	entries, err := samples.ReadDir("samples")
	if err != nil {
		return 0, false, err
	}
	for _, e := range entries {
		data, err := samples.ReadFile("samples/" + e.Name())
		if err != nil {
			return n, false, err
		}
		res, err := srv.Cmds.ImportTraces.Handle(ctx, commands.ImportTraces{Actor: commands.Actor{UserID: userID}, Input: commands.ImportTracesInput{Format: "stash", Data: data, SourceID: "samples"}})
		if err != nil {
			return n, false, err
		}
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err = srv.Waiter.Wait(wctx, res.LastEventID)
		cancel()
		if err != nil {
			return n, false, err
		}
		n += len(res.TraceIDs)
	}
	return n, true, nil
}
