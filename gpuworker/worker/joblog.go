package worker

import (
	"log/slog"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/criticml/critic/domain/jobs/lease"
)

// ErrorTailChars is how much of a job's log a failure report carries (spec 002
// "Status": the last 2000 characters of worker.log).
const ErrorTailChars = 2000

// LogTail keeps the last N characters (runes) written to it: a job's worker log,
// whose tail becomes the error of a failed model.
type LogTail struct {
	mu  sync.Mutex
	n   int
	buf []byte
}

// NewLogTail keeps the last n characters.
func NewLogTail(n int) *LogTail { return &LogTail{n: n} }

// Write appends p; it never fails.
func (t *LogTail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	// A rune is at most 4 bytes: 4n bytes always hold the last n characters.
	if limit := 4 * t.n; len(t.buf) > 2*limit {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-limit:]...)
	}
	return len(p), nil
}

// String returns the last n characters written, starting at a character boundary.
func (t *LogTail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf
	// Walk back n runes from the end.
	i, count := len(b), 0
	for i > 0 && count < t.n {
		_, size := utf8.DecodeLastRune(b[:i])
		i -= size
		count++
	}
	// Drop continuation bytes of a rune cut by trimming.
	for i < len(b) && !utf8.RuneStart(b[i]) {
		i++
	}
	return string(b[i:])
}

// jobLogger returns a logger that writes to base (with the job's attributes) and,
// without them, to a fresh tail: everything logged for the job is in the tail.
func jobLogger(base *slog.Logger, attrs ...any) (*slog.Logger, *LogTail) {
	tail := NewLogTail(ErrorTailChars)
	th := slog.NewTextHandler(tail, &slog.HandlerOptions{Level: slog.LevelInfo})
	return slog.New(slog.NewMultiHandler(base.With(attrs...).Handler(), th)), tail
}

// FailureReport is a failed job's error as the model shows it: headline
// (what happened) on the first line, then the job's log, both within the
// 2000 characters a model's error keeps, the log cut at a line boundary.
func FailureReport(headline, log string) string {
	headline = strings.TrimSpace(headline)
	if log = strings.TrimRight(log, "\n"); log == "" {
		return lease.FitError(headline)
	}
	return lease.FitError(headline + "\n" + log)
}
