// Command critic is Critic's one binary: the API server, the worker, the
// all-in-one `run`, and the operator commands (migrate, replay, users, model).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/criticml/critic/handlers/queryhost"
)

const usage = `critic — turn AI-agent traces into reward models

Usage:
  critic run                       everything in one process with embedded defaults
  critic serve                     the API, relay and projections
  critic worker [--help]           a standalone training/scoring/extraction/title worker (CRITIC_API_URL, KAFKA_BROKERS)
  critic broker [--port N | --listen HOST:PORT]
                                   run the embedded Kafka-protocol broker on its own
  critic migrate                   apply database migrations
  critic replay readmodel          rebuild the Postgres read model from the event log
  critic projections status        each projection's position, lag and parked events
  critic projections retry EVENT_ID|all   retry a parked event after fixing its cause
  critic projections skip EVENT_ID --reason TEXT   pass over a parked event that can never apply
  critic replay snapshot           rebuild the DuckDB query snapshots from the log (stop the server first)
  critic keys rotate               re-wrap every trace's data key with a new master key (stop the server first)
  critic keys seal-existing        seal the events stored in clear before encryption was on (stop the server first)
  critic users create --name NAME [--read-only-key]
  critic users issue-key --name NAME [--read-only-key]
  critic users disable-reward-models NAME
  critic users enable-reward-models NAME
  critic audit model ID            show each training pair's annotations and findings; verify the dataset against the log
  critic eval feedback             run the synthetic feedback-classifier suite against CRITIC_FEEDBACK_MODEL
  critic evaluator benchmark freeze|verify
                                   freeze a shared-evaluator benchmark version / rebuild every version from the log
  critic model init|train|score|tokenize ...

Client commands (talk to a server over HTTP; no database, no broker):
  critic login --url URL           store the server and an API key (stdin or CRITIC_API_KEY)
  critic import PATH… [--format auto|NAME] [--source-id ID] [--dry-run]
                                   send files, folders or - (stdin) to POST /traces/import
  critic sessions sync [--claude-dir DIR] [--codex-dir DIR]
                                   upload every local Claude Code and Codex session
  critic hooks install|uninstall claude-code|codex
  critic hooks status              what is installed, the queue, the last upload

Configuration is read from the environment: DATABASE_URL, KAFKA_BROKERS,
BLOB_URL, CRITIC_DATA_DIR, CRITIC_ADDR, CRITIC_FEEDBACK_MODEL, CRITIC_FAST_MODEL,
OPENAI_API_KEY, ANTHROPIC_API_KEY; client commands read CRITIC_URL,
CRITIC_API_KEY, CRITIC_CONFIG_DIR (see docs/configuration.md).
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := dispatch(ctx, os.Args[1:]); err != nil {
		if _, ok := errors.AsType[usageError](err); ok {
			fmt.Fprint(os.Stderr, usage)
		}
		fmt.Fprintln(os.Stderr, "critic:", err)
		os.Exit(1)
	}
}

type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// parseAnywhere parses fs's flags wherever they stand among the positional
// arguments (`critic users erase NAME --yes` as well as `--yes NAME`), which
// the flag package alone stops at, and returns the positional ones. A bad
// flag is the usage error.
func parseAnywhere(fs *flag.FlagSet, args []string, usage string) ([]string, error) {
	var pos []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return nil, usageError{usage}
		}
		if args = fs.Args(); len(args) > 0 {
			pos, args = append(pos, args[0]), args[1:]
		}
	}
	return pos, nil
}

func dispatch(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return usageError{"no command given"}
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "query-host":
		// Started by serve and run, never by hand (handlers/queryhost). The
		// parent decides when it stops (by closing its standard input), so a
		// Ctrl-C sent to the whole process group does not cut it short.
		signal.Ignore(os.Interrupt, syscall.SIGTERM)
		return queryhost.Serve(os.Stdin, os.Stdout, slog.New(slog.NewTextHandler(os.Stderr, nil)).With("process", "query-host"))
	case "model":
		return modelCommand(rest)
	case "help", "-h", "--help":
		fmt.Print(usage)
		return nil
	}
	if run, ok := subcommands[cmd]; ok {
		return run(ctx, rest)
	}
	return usageError{fmt.Sprintf("unknown command %q", cmd)}
}

// subcommands are critic's commands that take the context and their
// arguments; the client ones (login, import, sessions, hooks) never boot
// infrastructure.
var subcommands = map[string]func(ctx context.Context, args []string) error{
	"run": cmdRun, "serve": cmdServe, "worker": cmdWorker, "migrate": cmdMigrate, "replay": cmdReplay, "keys": cmdKeys,
	"projections": cmdProjections, "users": cmdUsers, "broker": cmdBroker, "eval": cmdEval, "audit": cmdAudit,
	"evaluator": cmdEvaluator, "login": cmdLogin, "import": cmdImport, "sessions": cmdSessions, "hooks": cmdHooks,
}
