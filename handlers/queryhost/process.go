package queryhost

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/platform/duck"
	"github.com/criticml/critic/platform/eventstore"
	"github.com/criticml/critic/platform/keyring"
	"github.com/criticml/critic/projections/snapshot"
)

// Process is the parent's side: it starts the child, restarts it when it
// exits, and forwards queries and snapshot writes to it. It satisfies the
// query use case's snapshot port and projections.Applier.
type Process struct {
	command []string
	cfg     Config
	blobs   blob.Store
	keys    *keyring.Ring
	log     *slog.Logger
	onQuery func(time.Duration, error)

	client *http.Client

	done chan struct{} // closed when the last child exited after ctx ended

	mu      sync.Mutex
	up      bool
	upCh    chan struct{} // closed when the current child is ready
	stopped bool
	// lastExit is how the last child ended (nil before any did): what
	// Down names while the next one starts.
	lastExit error
}

// ProcessOptions configure Start.
type ProcessOptions struct {
	// Command runs the child: the server's own executable and the
	// `query-host` argument.
	Command []string
	// Dir is the snapshot directory, Options the query options (OnQuery is
	// called here, in the parent).
	Dir     string
	Options duck.Options
	// MemoryLimit is the child's RLIMIT_DATA in bytes (0: none).
	MemoryLimit int64
	// Blobs resolves claim-checked payloads before they are sent.
	Blobs blob.Store
	// Keys opens sealed payloads before they are sent (nil: stored in clear).
	Keys *keyring.Ring
	Log  *slog.Logger
}

// restartDelay is how long the parent waits before starting a child again,
// so a child that cannot start does not spin.
const restartDelay = time.Second

// readyWait is how long a query or a write waits for a restarting child.
const readyWait = 5 * time.Second

// Start starts the child and keeps one running until ctx ends. It returns
// once the first child is ready or failed to start.
func Start(ctx context.Context, o ProcessOptions) (*Process, error) {
	if len(o.Command) == 0 {
		return nil, errors.New("query host: no command to start the query process")
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("query host: %w", err)
	}
	sockDir, err := os.MkdirTemp("", "critic-query-")
	if err != nil {
		return nil, fmt.Errorf("query host: socket directory: %w", err)
	}
	sock := filepath.Join(sockDir, "query.sock")
	opts := o.Options
	opts.OnQuery = nil
	p := &Process{
		command: o.Command, blobs: o.Blobs, keys: o.Keys, log: o.Log, onQuery: o.Options.OnQuery,
		cfg:  Config{Dir: o.Dir, Socket: sock, MemoryLimit: o.MemoryLimit, Options: opts},
		upCh: make(chan struct{}), done: make(chan struct{}),
	}
	if p.log == nil {
		p.log = slog.Default()
	}
	p.client = &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
		MaxIdleConnsPerHost: 16,
	}}
	first := make(chan error, 1)
	go func() {
		defer close(p.done)
		defer os.RemoveAll(sockDir)
		p.supervise(ctx, first)
	}()
	select {
	case err := <-first:
		if err != nil {
			return nil, err
		}
		return p, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// supervise runs children one after another until ctx ends; the first
// child's start (or its failure) is reported on first.
func (p *Process) supervise(ctx context.Context, first chan<- error) {
	for n := 0; ; n++ {
		err := p.runChild(ctx, first)
		first = nil
		if ctx.Err() != nil {
			p.mu.Lock()
			p.stopped = true
			p.mu.Unlock()
			return
		}
		p.mu.Lock()
		p.lastExit = err
		p.mu.Unlock()
		p.log.Error("query process exited; restarting it (queries answer 503 until it is ready)", "err", err, "restarts", n+1)
		select {
		case <-ctx.Done():
			return
		case <-time.After(restartDelay):
		}
	}
}

// runChild starts one child, waits for its "ready" and then for its end.
func (p *Process) runChild(ctx context.Context, first chan<- error) error {
	_ = os.Remove(p.cfg.Socket)
	cmd := exec.Command(p.command[0], p.command[1:]...)
	// Kill the child with the parent even if the parent is killed; its
	// standard input closing ends it in every other case.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return p.report(first, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return p.report(first, err)
	}
	if err := cmd.Start(); err != nil {
		return p.report(first, fmt.Errorf("query host: start %s: %w", p.command[0], err))
	}
	line, _ := json.Marshal(p.cfg)
	_, _ = stdin.Write(append(line, '\n'))
	ready := make(chan error, 1)
	outDone := make(chan struct{})
	go func() {
		defer close(outDone)
		s := bufio.NewScanner(stdout)
		if s.Scan() && s.Text() == "ready" {
			ready <- nil
			_, _ = io.Copy(io.Discard, stdout)
			return
		}
		ready <- errors.New("query host: the query process exited before it was ready (see its log above)")
	}()
	exited := make(chan error, 1)
	go func() {
		<-outDone // Wait closes stdout: only after the reader is done with it
		exited <- cmd.Wait()
	}()
	var readyErr error
	select {
	case readyErr = <-ready:
	case <-ctx.Done():
		_ = stdin.Close()
		_ = cmd.Process.Kill()
		<-exited
		return ctx.Err()
	}
	if readyErr != nil {
		<-exited
		return p.report(first, readyErr)
	}
	p.mu.Lock()
	p.up = true
	close(p.upCh)
	p.mu.Unlock()
	p.report(first, nil)

	var werr error
	select {
	case werr = <-exited:
	case <-ctx.Done():
		_ = stdin.Close() // the child shuts down cleanly: files checkpointed
		select {
		case werr = <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			werr = <-exited
		}
	}
	p.mu.Lock()
	p.up = false
	p.upCh = make(chan struct{})
	p.mu.Unlock()
	if werr == nil {
		werr = errors.New("exited")
	}
	return werr
}

func (p *Process) report(first chan<- error, err error) error {
	if first != nil {
		first <- err
	}
	return err
}

// Wait returns once the supervisor stopped (its context ended) and the
// last child exited.
func (p *Process) Wait() { <-p.done }

// Down returns nil while a child is running and ready, else an error saying
// why none is (it exited, how, and is being restarted; or the server is
// stopping). /readyz reports it: meanwhile every query answers 503 and the
// snapshot falls behind, so a load balancer should send queries elsewhere.
func (p *Process) Down() error {
	p.mu.Lock()
	up, stopped, last := p.up, p.stopped, p.lastExit
	p.mu.Unlock()
	switch {
	case up:
		return nil
	case stopped:
		return errors.New("the query process is stopped: the server is shutting down")
	case last != nil:
		return fmt.Errorf("the query process exited (%v) and is restarting; POST /query answers 503 "+
			"query_process_restarting until it is ready", last)
	}
	return errors.New("the query process is starting; POST /query answers 503 query_process_restarting until it is ready")
}

// waitUp waits (bounded) for a running child.
func (p *Process) waitUp(ctx context.Context) error {
	p.mu.Lock()
	up, ch, stopped := p.up, p.upCh, p.stopped
	p.mu.Unlock()
	if up {
		return nil
	}
	if stopped {
		return errors.New("query host: stopped")
	}
	t := time.NewTimer(readyWait)
	defer t.Stop()
	select {
	case <-ch:
		return nil
	case <-t.C:
		return &domain.UnavailableError{Code: "query_process_restarting", RetryAfterSeconds: 2,
			Message: "the query process is restarting; retry shortly"}
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Query runs one query in the child (duck.Snapshots.Query there).
func (p *Process) Query(ctx context.Context, owner, sql string) (*duck.Result, error) {
	start := time.Now()
	res, err := p.query(ctx, owner, sql)
	if p.onQuery != nil {
		p.onQuery(time.Since(start), err)
	}
	return res, err
}

func (p *Process) query(ctx context.Context, owner, sql string) (*duck.Result, error) {
	if err := p.waitUp(ctx); err != nil {
		return nil, err
	}
	body, _ := json.Marshal(queryRequest{Owner: owner, SQL: sql})
	var res duck.Result
	if err := p.call(ctx, "/query", body, &res); err != nil {
		if errors.Is(err, errLost) {
			return nil, &domain.UnavailableError{Code: "query_process_restarting", RetryAfterSeconds: 2,
				Message: fmt.Sprintf("the query process stopped while running this query and is being restarted; if the same query "+
					"stops it again it needs more memory than the query process may use (%d MiB, CRITIC_QUERY_PROCESS_MEMORY)",
					p.cfg.MemoryLimit>>20)}
		}
		return nil, err
	}
	return &res, nil
}

// Apply sends a batch to the child's snapshot projection after resolving
// claim checks here, where the blob store is.
func (p *Process) Apply(ctx context.Context, envs []events.Envelope) error {
	send := make([]events.Envelope, 0, len(envs))
	for _, e := range envs {
		if !snapshot.Handles(e.Type) || e.OwnerID == "" {
			continue
		}
		r, err := eventstore.Resolve(ctx, p.blobs, p.keys, e)
		if eventstore.IsErased(err) {
			continue // an erased event projects nothing
		}
		if err != nil {
			return err
		}
		send = append(send, r)
	}
	if len(send) == 0 {
		return nil
	}
	if err := p.waitUp(ctx); err != nil {
		return err
	}
	body, err := json.Marshal(send)
	if err != nil {
		return err
	}
	return p.call(ctx, "/apply", body, nil)
}

// errLost is a request whose child went away before answering.
var errLost = errors.New("query host: the query process went away")

func (p *Process) call(ctx context.Context, path string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://query-host"+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := p.client.Do(req)
	if err != nil {
		return lost(ctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNoContent {
		return nil
	}
	if resp.StatusCode != http.StatusOK {
		var we wireError
		if err := json.NewDecoder(resp.Body).Decode(&we); err != nil {
			return lost(ctx, err)
		}
		return we.decode()
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return lost(ctx, err)
	}
	return nil
}

// lost is a call that got no whole answer: the caller's own end (ctx), or
// errLost, the child went away.
func lost(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("%w: %v", errLost, err)
}
