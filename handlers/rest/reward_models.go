package rest

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/handlers"
	"github.com/criticml/critic/projections/readmodel"
	"github.com/criticml/critic/platform/blob"
)

// WeightsURLTTL is how long a weights download link works (spec 002).
const WeightsURLTTL = 5 * time.Minute

// WithBlobs gives the API the blob store that signs checkpoint downloads.
func (a *API) WithBlobs(b blob.Store) *API {
	a.blobs = b
	return a
}

type requestTrainingBody struct {
	Name      *string  `json:"name"`
	TraceIDs  []string `json:"trace_ids"`
	BaseModel *string  `json:"base_model"`
	Epochs    *int     `json:"epochs"`
	MaxPairs  *int     `json:"max_pairs"`
}

// createRewardModel is POST /reward-models. The deployment chooses compute:
// a `compute` field (or any unknown field) is 422.
func (a *API) createRewardModel(w http.ResponseWriter, r *http.Request) error {
	caller := handlers.CallerFrom(r.Context())
	if err := handlers.RequireWrite(caller); err != nil {
		return err
	}
	var body requestTrainingBody
	if err := a.decodeBody(w, r, &body); err != nil {
		return err
	}
	if body.Name == nil {
		return &domain.ValidationError{Code: "invalid_request", Field: "name", Message: "name is required"}
	}
	in := commands.RequestTraining{Name: *body.Name, TraceIDs: body.TraceIDs}
	if body.BaseModel != nil {
		in.BaseModel = *body.BaseModel
	}
	if body.Epochs != nil {
		if *body.Epochs < 1 {
			return &domain.ValidationError{Code: "invalid_request", Field: "epochs", Message: "epochs must be 1–100"}
		}
		in.Epochs = *body.Epochs
	}
	if body.MaxPairs != nil {
		if *body.MaxPairs < 1 {
			return &domain.ValidationError{Code: "invalid_request", Field: "max_pairs", Message: "max_pairs must be 1–1000000"}
		}
		in.MaxPairs = *body.MaxPairs
	}
	res, err := a.cmds.RequestTraining(r.Context(), handlers.Actor(caller), in)
	if err != nil {
		return err
	}
	err = a.respondModel(w, r, res.Result, res.ModelID, http.StatusOK)
	var lag *domain.UnavailableError
	if errors.As(err, &lag) {
		// The request is stored (its event is in Postgres) but the read
		// model lags — e.g. the broker is down. It will train once the
		// events flow: answer with the queued model rather than an error.
		handlers.WriteJSON(w, http.StatusOK, a.queuedModel(res.ModelID, in))
		return nil
	}
	return err
}

// queuedModel is a just-requested model as the command stored it.
func (a *API) queuedModel(id string, in commands.RequestTraining) readmodel.RewardModel {
	return readmodel.RewardModel{ID: id, Name: in.Name, BaseModel: orDefault(in.BaseModel, rewardmodels.DefaultBaseModel), Compute: rewardmodels.Compute,
		Epochs: orDefaultInt(in.Epochs, rewardmodels.DefaultEpochs), MaxPairs: orDefaultInt(in.MaxPairs, domain.DefaultMaxPairs), TraceCount: len(uniq(in.TraceIDs)), Status: rewardmodels.StatusQueued,
		Metrics: json.RawMessage("null"), Progress: json.RawMessage("null"), CreatedAt: time.Now().UTC()}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func orDefaultInt(n, def int) int {
	if n == 0 {
		return def
	}
	return n
}

func uniq(xs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

func (a *API) respondModel(w http.ResponseWriter, r *http.Request, res commands.Result, id string, status int) error {
	if err := a.settle(r.Context(), res); err != nil {
		return err
	}
	m, err := a.queries.GetRewardModel(r.Context(), handlers.CallerFrom(r.Context()).UserID, id)
	if err != nil {
		return err
	}
	handlers.WriteJSON(w, status, m.RewardModel)
	return nil
}

func (a *API) listRewardModels(w http.ResponseWriter, r *http.Request) error {
	ms, err := a.queries.ListRewardModels(r.Context(), handlers.CallerFrom(r.Context()).UserID)
	if err != nil {
		return err
	}
	handlers.WriteJSON(w, http.StatusOK, ms)
	return nil
}

func (a *API) getRewardModel(w http.ResponseWriter, r *http.Request) error {
	m, err := a.queries.GetRewardModel(r.Context(), handlers.CallerFrom(r.Context()).UserID, r.PathValue("model_id"))
	if err != nil {
		return err
	}
	handlers.WriteJSON(w, http.StatusOK, m)
	return nil
}

// retryRewardModel is POST /reward-models/{id}/retry: 202, 409 unless failed.
func (a *API) retryRewardModel(w http.ResponseWriter, r *http.Request) error {
	caller := handlers.CallerFrom(r.Context())
	if err := handlers.RequireWrite(caller); err != nil {
		return err
	}
	id := r.PathValue("model_id")
	res, err := a.cmds.RetryTraining(r.Context(), handlers.Actor(caller), id)
	if err != nil {
		return err
	}
	return a.respondModel(w, r, res, id, http.StatusAccepted)
}

// weights is GET /reward-models/{id}/weights: a five-minute signed URL that
// needs no API key; 404 unless the caller owns the model and it succeeded.
func (a *API) weights(w http.ResponseWriter, r *http.Request) error {
	key, err := a.queries.ArtifactKey(r.Context(), handlers.CallerFrom(r.Context()).UserID, r.PathValue("model_id"))
	if err != nil {
		return err
	}
	url, err := a.blobs.SignedURL(r.Context(), key, WeightsURLTTL)
	if err != nil {
		return err
	}
	handlers.WriteJSON(w, http.StatusOK, map[string]string{"url": url})
	return nil
}

type scoreBody struct {
	RewardModelID *string `json:"reward_model_id"`
}

// scoreTrace is POST /traces/{id}/score: 202 with the ScoringRun answering
// the request (new, active, or already completed for this revision).
func (a *API) scoreTrace(w http.ResponseWriter, r *http.Request) error {
	caller := handlers.CallerFrom(r.Context())
	if err := handlers.RequireWrite(caller); err != nil {
		return err
	}
	var body scoreBody
	if err := a.decodeBody(w, r, &body); err != nil {
		return err
	}
	if body.RewardModelID == nil {
		return &domain.ValidationError{Code: "invalid_request", Field: "reward_model_id", Message: "reward_model_id is required"}
	}
	res, err := a.cmds.RequestScoring(r.Context(), handlers.Actor(caller), r.PathValue("trace_id"), *body.RewardModelID)
	if err != nil {
		return err
	}
	if err := a.settle(r.Context(), res.Result); err != nil {
		return err
	}
	run, err := a.queries.GetScoringRun(r.Context(), caller.UserID, res.RunID)
	if err != nil {
		return err
	}
	handlers.WriteJSON(w, http.StatusAccepted, run)
	return nil
}
