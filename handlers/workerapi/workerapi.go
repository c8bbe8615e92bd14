// Package workerapi is the worker service: the only way a GPU worker changes
// anything. Workers hold a worker token, the Kafka address and blob-store
// access — never database credentials — and report claims, heartbeats and
// results here; the service runs the matching commands, which append the
// events.
//
// Every kind of job is served by one route (jobs.RouteJob:
// /jobs/{kind}/{id}/{claim|beat|report|finish|fail|handback}) and one
// command handler (commands.Job), which runs the kind's action.
package workerapi

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/handlers/edge"
)

// Prefix is where the worker service lives (jobs.ServicePrefix).
const Prefix = jobs.ServicePrefix

// DefaultLease is how long a claim lives without a heartbeat.
const DefaultLease = 30 * time.Second

// Config is what the worker service is built over.
type Config struct {
	Cmds *commands.Commands
	// Token is the shared worker token.
	Token string
	// Lease is how long a claim lives without a heartbeat (<= 0:
	// DefaultLease).
	Lease time.Duration
	// TrainingQueue lets free workers pull training attempts
	// (jobs.RouteClaimNext); nil refuses them.
	TrainingQueue TrainingQueue
	// Fleet, when set, records every worker's presence report (device,
	// bases), which GET /base-models reads.
	Fleet *Fleet
	// Observer, when set, is told of every claim and result report.
	Observer Observer
}

// API is the worker service.
type API struct{ Config }

// Observer counts claims and reports by job kind ("train", "score"); the
// Prometheus metrics implement it.
type Observer interface {
	JobClaimed(kind string, refused bool)
	JobReported(kind, outcome string)
}

// TrainingQueue nominates claimable training attempts, oldest first (the
// read model's ClaimableTraining); the model's stream decides each claim.
type TrainingQueue interface {
	ClaimableTraining(ctx context.Context, limit int) ([]rewardmodels.TrainingCandidate, error)
}

// New returns the worker service over c.
func New(c Config) *API {
	if c.Lease <= 0 {
		c.Lease = DefaultLease
	}
	return &API{c}
}

// Mux is where Register mounts the routes (an *http.ServeMux); an interface
// so a test can list exactly what the service serves.
type Mux interface {
	HandleFunc(pattern string, handler func(http.ResponseWriter, *http.Request))
}

// Register mounts the routes: every one is a domain/jobs route constant
// (jobs.Routes), the contract the worker's client is written against.
func (a *API) Register(mux Mux) {
	route := func(pattern string, h func(r *http.Request) (any, error)) {
		method, path, _ := strings.Cut(pattern, " ")
		mux.HandleFunc(method+" "+Prefix+path, func(w http.ResponseWriter, r *http.Request) {
			if !a.authorized(r) {
				edge.WriteError(w, &domain.UnauthorizedError{Message: "missing or wrong worker token"})
				return
			}
			out, err := h(r)
			if err != nil {
				edge.WriteError(w, err)
				return
			}
			edge.WriteJSON(w, http.StatusOK, out)
		})
	}
	route(jobs.RouteHello, a.hello)
	route(jobs.RouteClaimNext, a.claimNext)
	route(jobs.RouteJob, a.job)
}

func (a *API) authorized(r *http.Request) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && a.Token != "" && subtle.ConstantTimeCompare([]byte(got), []byte(a.Token)) == 1
}

// decode reads a worker's call. What a worker reports is mostly a model's
// answer about trace content (titles, labels, findings, skills): outside
// text, so it passes the edge's text rule (domain.CheckJSON) like a
// client's body before anything is appended.
func decode(r *http.Request, v any) error {
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, edge.DefaultMaxBody))
	if err != nil {
		return domain.Invalid("malformed request: %v", err)
	}
	if err := domain.CheckJSON("", body); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return domain.Invalid("malformed request: %v", err)
	}
	return nil
}

// hello answers a worker's start-up check: reaching it at all proves the
// address, and the route's token check proves the token.
func (a *API) hello(r *http.Request) (any, error) {
	var req jobs.Hello
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	return jobs.HelloAnswer{OK: true, LeaseSeconds: int(a.Lease.Seconds())}, nil
}
