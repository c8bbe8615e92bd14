// Package logtest holds what tests need to read the logs of code that logs
// from its own goroutines (kafka-go, the relay, a worker, an API server):
// one goroutine-safe sink instead of a copy in every test package.
package logtest

import (
	"bytes"
	"strings"
	"sync"
)

// Buffer is an io.Writer for a log handler that a test can read while other
// goroutines still write to it. The zero value is ready to use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String is everything written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Lines are the lines written so far that contain substr ("" for all).
func (s *Buffer) Lines(substr string) []string {
	var out []string
	for l := range strings.SplitSeq(s.String(), "\n") {
		if l != "" && strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return out
}
