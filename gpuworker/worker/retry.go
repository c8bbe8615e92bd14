package worker

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/platform/requestid"
)

// The runner's small tools: retrying a call while the API is unreachable,
// the ids a job may name, and what a job's log lines carry.

// retry calls fn until it succeeds, fails for good (not Transient), ctx ends or,
// when limit > 0, limit has passed.
func retry[T any](ctx context.Context, limit time.Duration, log *slog.Logger, what string, fn func(context.Context) (T, error)) (T, error) {
	start := time.Now()
	for attempt := 1; ; attempt++ {
		v, err := fn(ctx)
		if err == nil || !Transient(err) || ctx.Err() != nil || (limit > 0 && time.Since(start) > limit) {
			return v, err
		}
		log.Warn(what+" failed; retrying", "error", err, "attempt", attempt)
		if !sleep(ctx, backoff(attempt, 30*time.Second)) {
			return v, err
		}
	}
}

func backoff(attempt int, ceiling time.Duration) time.Duration {
	d := 500 * time.Millisecond
	for i := 1; i < attempt && d < ceiling; i++ {
		d *= 2
	}
	return min(d, ceiling)
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// safeID accepts ids that are safe as one path segment and blob-key segment.
func safeID(id string) bool {
	return id != "" && len(id) <= 200 && !strings.ContainsAny(id, `/\`) && !strings.HasPrefix(id, ".") &&
		blob.ValidateKey(id) == nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// withRequestID adds the job's request id to a job logger's attributes, so
// every line of the job carries the id of the request that caused it.
func withRequestID(ctx context.Context, args ...any) []any {
	if id := requestid.From(ctx); id != "" {
		args = append(args, "request_id", id)
	}
	return args
}
