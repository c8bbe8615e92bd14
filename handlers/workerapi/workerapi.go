// Package workerapi is the worker service: the only way a GPU worker changes
// anything. Workers hold a worker token, the Kafka address and blob-store
// access — never database credentials — and report claims, heartbeats and
// results here; the service runs the matching commands, which append the
// events.
package workerapi

import (
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/handlers/edge"
)

// Prefix is where the worker service lives.
const Prefix = "/api/v1/worker"

// DefaultLease is how long a claim lives without a heartbeat.
const DefaultLease = 30 * time.Second

// API is the worker service.
type API struct {
	cmds  *commands.Commands
	token string
	lease time.Duration
}

// New returns the worker service; token is the shared worker token.
func New(cmds *commands.Commands, token string, lease time.Duration) *API {
	if lease <= 0 {
		lease = DefaultLease
	}
	return &API{cmds: cmds, token: token, lease: lease}
}

// Register mounts the routes.
func (a *API) Register(mux *http.ServeMux) {
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
	route("POST /training/{model_id}/claim", a.claimTraining)
	route("POST /training/{model_id}/heartbeat", a.heartbeat)
	route("POST /training/{model_id}/succeeded", a.succeeded)
	route("POST /training/{model_id}/failed", a.failed)
	route("POST /scoring/{run_id}/claim", a.claimScoring)
	route("POST /scoring/{run_id}/finished", a.finishScoring)
	route("POST /extraction/{model_id}/claim", a.claimExtraction)
	route("POST /extraction/{model_id}/progress", a.extractionProgress)
	route("POST /extraction/{model_id}/findings", a.extractionFindings)
	route("POST /extraction/{model_id}/finished", a.extractionFinished)
	route("POST /titles/{trace_id}/source", a.titleSource)
	route("POST /titles/{trace_id}", a.recordTitle)
}

func (a *API) authorized(r *http.Request) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && a.token != "" && subtle.ConstantTimeCompare([]byte(got), []byte(a.token)) == 1
}

func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 64<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return domain.Invalid("malformed request: %v", err)
	}
	return nil
}

type attemptRequest struct {
	WorkerID string `json:"worker_id"`
	Attempt  int    `json:"attempt"`
}

type claimResponse struct {
	ModelID      string `json:"model_id"`
	OwnerID      string `json:"owner_id"`
	Name         string `json:"name"`
	BaseModel    string `json:"base_model"`
	DatasetKey   string `json:"dataset_key"`
	ArtifactKey  string `json:"artifact_key"`
	Attempt      int    `json:"attempt"`
	Epochs       int    `json:"epochs"`
	LeaseSeconds int    `json:"lease_seconds"`
}

func (a *API) claimTraining(r *http.Request) (any, error) {
	var req attemptRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	if req.WorkerID == "" {
		return nil, domain.Invalid("worker_id is required")
	}
	j, err := a.cmds.ClaimTraining(r.Context(), req.WorkerID, r.PathValue("model_id"), req.Attempt, a.lease)
	if err != nil {
		return nil, err
	}
	return claimResponse{ModelID: j.ModelID, OwnerID: j.OwnerID, Name: j.Name, BaseModel: j.BaseModel, DatasetKey: j.DatasetKey,
		ArtifactKey: j.ArtifactKey, Attempt: j.Attempt, Epochs: j.Epochs, LeaseSeconds: j.LeaseSeconds}, nil
}

func (a *API) heartbeat(r *http.Request) (any, error) {
	var req struct {
		attemptRequest
		Progress events.Progress `json:"progress"`
	}
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	_, err := a.cmds.Heartbeat(r.Context(), req.WorkerID, r.PathValue("model_id"), req.Attempt, req.Progress)
	return map[string]bool{"ok": err == nil}, err
}

func (a *API) succeeded(r *http.Request) (any, error) {
	var req struct {
		attemptRequest
		Metrics           json.RawMessage `json:"metrics"`
		RewardStats       json.RawMessage `json:"reward_stats"`
		ActionRewardStats json.RawMessage `json:"action_reward_stats"`
		ScoresKey         string          `json:"scores_key"`
		ActionScoresKey   string          `json:"action_scores_key"`
	}
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	if string(req.ActionRewardStats) == "null" {
		req.ActionRewardStats = nil
	}
	_, err := a.cmds.CompleteTraining(r.Context(), commands.CompleteTraining{WorkerID: req.WorkerID, ModelID: r.PathValue("model_id"),
		Attempt: req.Attempt, Metrics: req.Metrics, RewardStats: req.RewardStats, ActionStats: req.ActionRewardStats,
		ScoresKey: req.ScoresKey, ActionScoresKey: req.ActionScoresKey})
	return map[string]bool{"ok": err == nil}, err
}

func (a *API) failed(r *http.Request) (any, error) {
	var req struct {
		attemptRequest
		Error string `json:"error"`
	}
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	_, err := a.cmds.FailTraining(r.Context(), req.WorkerID, r.PathValue("model_id"), req.Attempt, req.Error)
	return map[string]bool{"ok": err == nil}, err
}

type scoringRequest struct {
	WorkerID string `json:"worker_id"`
	TraceID  string `json:"trace_id"`
	ModelID  string `json:"model_id"`
}

func (a *API) claimScoring(r *http.Request) (any, error) {
	var req scoringRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	key, err := a.cmds.ClaimScoring(r.Context(), req.WorkerID, req.TraceID, req.ModelID, r.PathValue("run_id"))
	return map[string]string{"items_key": key}, err
}

func (a *API) finishScoring(r *http.Request) (any, error) {
	var req struct {
		scoringRequest
		ActionScores []events.ActionScore `json:"action_scores"`
		Error        string               `json:"error"`
	}
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	_, err := a.cmds.FinishScoring(r.Context(), req.WorkerID, req.TraceID, req.ModelID, r.PathValue("run_id"), req.ActionScores, req.Error)
	return map[string]bool{"ok": err == nil}, err
}
