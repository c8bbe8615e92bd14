// Package workerapi is the worker service: the only way a GPU worker changes
// anything. Workers hold a worker token, the Kafka address and blob-store
// access — never database credentials — and report claims, heartbeats and
// results here; the service runs the matching commands, which append the
// events.
package workerapi

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/handlers/edge"
)

// Prefix is where the worker service lives (jobs.ServicePrefix).
const Prefix = jobs.ServicePrefix

// DefaultLease is how long a claim lives without a heartbeat.
const DefaultLease = 30 * time.Second

// API is the worker service.
type API struct {
	cmds  *commands.Commands
	token string
	lease time.Duration
	obs   Observer
	queue TrainingQueue
}

// Observer counts claims and reports by job kind ("train", "score"); the
// Prometheus metrics implement it.
type Observer interface {
	JobClaimed(kind string, refused bool)
	JobReported(kind, outcome string)
}

// WithObserver reports every claim and result report to o.
func (a *API) WithObserver(o Observer) *API {
	a.obs = o
	return a
}

func (a *API) claimed(kind string, err error) {
	if a.obs != nil {
		a.obs.JobClaimed(kind, err != nil)
	}
}

// reported counts a result report: outcome when the API accepted it,
// "rejected" when it refused it (a lost lease, a bad payload).
func (a *API) reported(kind, outcome string, err error) {
	if a.obs == nil {
		return
	}
	if err != nil {
		outcome = "rejected"
	}
	a.obs.JobReported(kind, outcome)
}

// New returns the worker service; token is the shared worker token.
func New(cmds *commands.Commands, token string, lease time.Duration) *API {
	if lease <= 0 {
		lease = DefaultLease
	}
	return &API{cmds: cmds, token: token, lease: lease}
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
	route(jobs.RouteClaimNextTraining, a.claimNextTraining)
	route(jobs.RouteHandBack, a.handBack)
	route(jobs.RouteClaimTraining, a.claimTraining)
	route(jobs.RouteHeartbeat, a.heartbeat)
	route(jobs.RouteSucceeded, a.succeeded)
	route(jobs.RouteFailed, a.failed)
	route(jobs.RouteClaimScoring, a.claimScoring)
	route(jobs.RouteScoringFinished, a.finishScoring)
	route(jobs.RouteScoringHandBack, a.handBackScoring)
	route(jobs.RouteClaimExtraction, a.claimExtraction)
	route(jobs.RouteExtractionProgress, a.extractionProgress)
	route(jobs.RouteExtractionFindings, a.extractionFindings)
	route(jobs.RouteExtractionFinished, a.extractionFinished)
	route(jobs.RouteExtractionHandBack, a.extractionHandBack)
	route(jobs.RouteTitleSource, a.titleSource)
	route(jobs.RouteTitleRecord, a.recordTitle)
	a.registerGepa(route)
	route(jobs.RouteLabelSource, a.labelSource)
	route(jobs.RouteLabelRecord, a.recordLabels)
	route(jobs.RouteLabelFailed, a.labelingFailed)
	route(jobs.RouteQualityCheckSource, a.qualityCheckSource)
	route(jobs.RouteQualityCheckRecord, a.recordQualityChecks)
	route(jobs.RouteAssessSource, a.assessSource)
	route(jobs.RouteAssessRecord, a.assessRecord)
	a.registerEvaluator(route)
}

func (a *API) authorized(r *http.Request) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && a.token != "" && subtle.ConstantTimeCompare([]byte(got), []byte(a.token)) == 1
}

// decode reads a worker's report. What a worker reports is mostly a
// model's answer about trace content (titles, labels, findings, skills):
// outside text, so it passes the edge's text rule (domain.CheckJSON) like
// a client's body before anything is appended.
func decode(r *http.Request, v any) error {
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, 64<<20))
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

func (a *API) claimTraining(r *http.Request) (any, error) {
	var req jobs.AttemptRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	if req.WorkerID == "" {
		return nil, domain.Invalid("worker_id is required")
	}
	j, err := a.cmds.ClaimTraining(r.Context(), req.WorkerID, r.PathValue("model_id"), req.Attempt, a.lease)
	a.claimed("train", err)
	if err != nil {
		return nil, err
	}
	return jobs.TrainingClaim{ModelID: j.ModelID, OwnerID: j.OwnerID, Name: j.Name, BaseModel: j.BaseModel, DatasetKey: j.DatasetKey,
		ArtifactKey: j.ArtifactKey, Attempt: j.Attempt, Epochs: j.Epochs, LeaseSeconds: j.LeaseSeconds}, nil
}

func (a *API) heartbeat(r *http.Request) (any, error) {
	var req jobs.Heartbeat
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	_, err := a.cmds.Heartbeat(r.Context(), req.WorkerID, r.PathValue("model_id"), req.Attempt, req.Progress)
	return jobs.Ack{OK: err == nil}, err
}

func (a *API) succeeded(r *http.Request) (any, error) {
	var req jobs.Succeeded
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	if string(req.ActionRewardStats) == "null" {
		req.ActionRewardStats = nil
	}
	_, err := a.cmds.CompleteTraining(r.Context(), commands.CompleteTraining{WorkerID: req.WorkerID, ModelID: r.PathValue("model_id"),
		Attempt: req.Attempt, Metrics: req.Metrics, RewardStats: req.RewardStats, ActionStats: req.ActionRewardStats,
		ScoresKey: req.ScoresKey, ActionScoresKey: req.ActionScoresKey})
	a.reported("train", "succeeded", err)
	return jobs.Ack{OK: err == nil}, err
}

func (a *API) failed(r *http.Request) (any, error) {
	var req jobs.Failed
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	_, err := a.cmds.FailTraining(r.Context(), req.WorkerID, r.PathValue("model_id"), req.Attempt, req.Error)
	a.reported("train", "failed", err)
	return jobs.Ack{OK: err == nil}, err
}

func (a *API) claimScoring(r *http.Request) (any, error) {
	var req jobs.ScoringRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	key, err := a.cmds.ClaimScoring(r.Context(), req.WorkerID, req.TraceID, req.ModelID, r.PathValue("run_id"))
	a.claimed("score", err)
	return jobs.ScoringClaim{ItemsKey: key}, err
}

func (a *API) handBackScoring(r *http.Request) (any, error) {
	var req jobs.ScoringHandBack
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	_, err := a.cmds.HandBackScoring(r.Context(), req.WorkerID, req.TraceID, req.ModelID, r.PathValue("run_id"), req.Reason)
	a.reported("score", "handed_back", err)
	return jobs.Ack{OK: err == nil}, err
}

func (a *API) finishScoring(r *http.Request) (any, error) {
	var req jobs.ScoringFinished
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	scores := make([]events.ActionScore, len(req.ActionScores))
	for i, s := range req.ActionScores {
		scores[i] = events.ActionScore{TraceID: s.TraceID, StepID: s.StepID, Score: s.Score, Credit: s.Credit}
	}
	_, err := a.cmds.FinishScoring(r.Context(), req.WorkerID, req.TraceID, req.ModelID, r.PathValue("run_id"), scores, req.Error)
	outcome := "succeeded"
	if req.Error != "" {
		outcome = "failed"
	}
	a.reported("score", outcome, err)
	return jobs.Ack{OK: err == nil}, err
}
