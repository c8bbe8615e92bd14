// Command critic is Critic's one binary: the API server, the worker, the
// all-in-one `run`, and the operator commands (migrate, replay, users, model).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

const usage = `critic — turn AI-agent traces into reward models

Usage:
  critic run                       everything in one process with embedded defaults
  critic serve                     the API, relay and projections
  critic worker                    a standalone training/scoring worker (CRITIC_API_URL, KAFKA_BROKERS)
  critic broker [--port N]         run the embedded Kafka-protocol broker on its own
  critic migrate                   apply database migrations
  critic replay readmodel          rebuild the Postgres read model from the event log
  critic projections status        each projection's position, lag and parked events
  critic projections retry EVENT_ID|all   retry a parked event after fixing its cause
  critic replay snapshot           rebuild the DuckDB query snapshots from the log (stop the server first)
  critic users create --name NAME [--read-only-key]
  critic users issue-key --name NAME [--read-only-key]
  critic users disable-reward-models NAME
  critic users enable-reward-models NAME
  critic audit model ID            show each training pair's annotations; verify the dataset against the log
  critic model init|train|score|tokenize ...

Configuration is read from the environment: DATABASE_URL, KAFKA_BROKERS,
BLOB_URL, CRITIC_DATA_DIR, CRITIC_ADDR (see README).
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := dispatch(ctx, os.Args[1:]); err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprint(os.Stderr, usage)
		}
		fmt.Fprintln(os.Stderr, "critic:", err)
		os.Exit(1)
	}
}

type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func dispatch(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return usageError{"no command given"}
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "run":
		return cmdRun(ctx, rest)
	case "serve":
		return cmdServe(ctx, rest)
	case "worker":
		return cmdWorker(ctx, rest)
	case "migrate":
		return cmdMigrate(ctx, rest)
	case "replay":
		return cmdReplay(ctx, rest)
	case "projections":
		return cmdProjections(ctx, rest)
	case "users":
		return cmdUsers(ctx, rest)
	case "broker":
		return cmdBroker(ctx, rest)
	case "audit":
		return cmdAudit(ctx, rest)
	case "model":
		return modelCommand(rest)
	case "help", "-h", "--help":
		fmt.Print(usage)
		return nil
	}
	return usageError{fmt.Sprintf("unknown command %q", cmd)}
}
