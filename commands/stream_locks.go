package commands

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/criticml/critic/domain"
)

// streamLocks serializes, within this process, the commands that write the
// same streams. Optimistic concurrency alone is correct but wasteful when an
// SDK sends every span of one trace in its own request at once (a
// SimpleSpanProcessor, Langfuse's immediate mode): all but one request would
// lose each round of the version check. With the lock, writers of one trace
// queue instead of colliding; the version check still guards against other
// processes. The zero value is ready to use.
type streamLocks struct {
	mu sync.Mutex
	m  map[string]*streamLock
}

type streamLock struct {
	mu      sync.Mutex
	holders int // goroutines holding or waiting for mu
}

// lock takes the locks of keys (deduplicated, in sorted order so that two
// multi-trace requests never deadlock) and returns the function that
// releases them.
func (l *streamLocks) lock(keys []string) (unlock func()) {
	names := slices.Compact(slices.Sorted(slices.Values(keys)))
	held := make([]*streamLock, len(names))
	for i, k := range names {
		l.mu.Lock()
		if l.m == nil {
			l.m = map[string]*streamLock{}
		}
		e := l.m[k]
		if e == nil {
			e = &streamLock{}
			l.m[k] = e
		}
		e.holders++
		l.mu.Unlock()
		e.mu.Lock()
		held[i] = e
	}
	return func() {
		for i, h := range slices.Backward(held) {
			h.mu.Unlock()
			l.mu.Lock()
			h.holders--
			if h.holders == 0 {
				delete(l.m, names[i])
			}
			l.mu.Unlock()
		}
	}
}

// contendedRetryBudget bounds how long retryContended keeps retrying before
// it tells the client to come back later.
const contendedRetryBudget = 10 * time.Second

// retryContended reruns a load-decide-append cycle while another writer
// (another process, or another command on the same stream) moved a stream in
// between, with jittered exponential backoff, until it applies. Ingest
// clients (OTLP exporters, importers) do not retry a 409, so a conflict never
// reaches them: if the streams stay contended past contendedRetryBudget (or
// the request ends) the answer is an UnavailableError, a 503 that every OTLP
// exporter retries after Retry-After.
func retryContended(ctx context.Context, fn func() (Result, error)) (Result, error) {
	deadline := time.Now().Add(contendedRetryBudget)
	backoff := 5 * time.Millisecond
	for {
		r, err := fn()
		if _, ok := errors.AsType[*domain.VersionConflictError](err); !ok {
			return r, err
		}
		sleep := backoff/2 + rand.N(backoff)
		if time.Now().Add(sleep).After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return Result{}, &domain.UnavailableError{Message: "other writes to the same trace kept this request from applying before it ended; retry", RetryAfterSeconds: 1}
		case <-time.After(sleep):
		}
		backoff = min(backoff*2, 500*time.Millisecond)
	}
	return Result{}, &domain.UnavailableError{Message: "the trace is being written by many requests at once; retry after the Retry-After delay", RetryAfterSeconds: 1}
}
