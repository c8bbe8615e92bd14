package queryhost

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"syscall"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/platform/duck"
	"github.com/criticml/critic/projections/snapshot"
)

// Serve is the child's side (`critic query-host`, started by the API, never
// by hand): it reads its Config from in, limits its own memory, opens the
// snapshots, listens on the socket, writes "ready" to out and serves until
// in closes — which happens when the parent exits, however it exits, so a
// child never outlives its API.
func Serve(in io.Reader, out io.Writer, log *slog.Logger) error {
	r := bufio.NewReader(in)
	line, err := r.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("query host: read config: %w", err)
	}
	var cfg Config
	if err := json.Unmarshal(line, &cfg); err != nil {
		return fmt.Errorf("query host: decode config: %w", err)
	}
	if cfg.MemoryLimit > 0 {
		lim := &syscall.Rlimit{Cur: uint64(cfg.MemoryLimit), Max: uint64(cfg.MemoryLimit)}
		if err := syscall.Setrlimit(syscall.RLIMIT_DATA, lim); err != nil {
			return fmt.Errorf("query host: limit memory to %d bytes: %w", cfg.MemoryLimit, err)
		}
	}
	opts := cfg.Options
	opts.OnOverrun = func() {
		log.Error("a query's work went on past its deadline without seeing its interrupt; ending the query process to stop it (the API starts a new one)")
		os.Exit(3)
	}
	snaps, err := duck.New(cfg.Dir, opts)
	if err != nil {
		return err
	}
	defer snaps.Close()
	ln, err := net.Listen("unix", cfg.Socket)
	if err != nil {
		return fmt.Errorf("query host: listen on %s: %w", cfg.Socket, err)
	}
	h := &host{snaps: snaps, proj: snapshot.New(snaps, nil, log)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /query", h.query)
	mux.HandleFunc("POST /apply", h.apply)
	srv := &http.Server{Handler: mux}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	if _, err := fmt.Fprintln(out, "ready"); err != nil {
		return err
	}
	parentGone := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, r)
		close(parentGone)
	}()
	select {
	case <-parentGone:
	case err := <-served:
		return err
	}
	_ = srv.Shutdown(context.Background())
	return nil
}

// host answers the parent's requests. Claim checks arrive resolved, so the
// projection needs no blob store here (a resolved payload is never
// fetched again).
type host struct {
	snaps *duck.Snapshots
	proj  *snapshot.Projection
}

func (h *host) query(w http.ResponseWriter, r *http.Request) {
	var q queryRequest
	if err := json.NewDecoder(r.Body).Decode(&q); err != nil {
		writeError(w, fmt.Errorf("decode query request: %w", err))
		return
	}
	res, err := h.snaps.Query(r.Context(), q.Owner, q.SQL)
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(res)
}

func (h *host) apply(w http.ResponseWriter, r *http.Request) {
	var envs []events.Envelope
	if err := json.NewDecoder(r.Body).Decode(&envs); err != nil {
		writeError(w, fmt.Errorf("decode events: %w", err))
		return
	}
	if err := h.proj.Apply(r.Context(), envs); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func writeError(w http.ResponseWriter, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusInternalServerError)
	_ = json.NewEncoder(w).Encode(encodeError(err))
}
