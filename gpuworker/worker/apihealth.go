package worker

import (
	"context"
	"errors"
	"net/http"
	"sync"
)

// apiHealth is whether the API answers, as the training loop's claims find
// it. While it is down the job-topic consumers leave their consumer group
// (between jobs), so the partitions — and the scoring, extraction, title,
// label and GEPA jobs on them — go to workers that can reach the API, and
// this worker takes no job until it answers again.
type apiHealth struct {
	mu      sync.Mutex
	down    bool
	changed chan struct{} // closed (and replaced) on every change
}

func newAPIHealth() *apiHealth { return &apiHealth{changed: make(chan struct{})} }

func (h *apiHealth) set(down bool) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.down == down {
		return false
	}
	h.down = down
	close(h.changed)
	h.changed = make(chan struct{})
	return true
}

func (h *apiHealth) state() (down bool, changed <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.down, h.changed
}

// waitUp blocks until the API answers again; false when ctx ended first.
func (h *apiHealth) waitUp(ctx context.Context) bool {
	for {
		down, changed := h.state()
		if !down {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-changed:
		}
	}
}

// unreachable reports whether err says the API could not be reached at
// all (a connection error, a timeout, or 502/503/504 from a proxy in front
// of it), as opposed to an answer of a live API.
func unreachable(err error) bool {
	if err == nil || !Transient(err) {
		return false
	}
	if ae, ok := errors.AsType[*APIError](err); ok {
		return ae.Status == http.StatusBadGateway || ae.Status == http.StatusServiceUnavailable || ae.Status == http.StatusGatewayTimeout
	}
	return true
}
