package rest

import (
	"encoding/json"
	"net/http"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/handlers/edge"
	"github.com/criticml/critic/handlers/usecase"
)

type requestTrainingBody struct {
	Name      *string  `json:"name"`
	TraceIDs  []string `json:"trace_ids"`
	BaseModel *string  `json:"base_model"`
	Epochs    *int     `json:"epochs"`
	MaxPairs  *int     `json:"max_pairs"`
	// TrainingConfig is checked field by field by the use case, so an
	// unknown field inside it is named.
	TrainingConfig json.RawMessage `json:"training_config"`
}

// createRewardModel is POST /reward-models. The deployment chooses compute:
// a `compute` field (or any unknown field) is 422.
func (a *API) createRewardModel(w http.ResponseWriter, r *http.Request) error {
	var body requestTrainingBody
	if err := a.decodeBody(w, r, &body); err != nil {
		return err
	}
	cfg, err := usecase.ParseTrainingConfig(body.TrainingConfig)
	if err != nil {
		return err
	}
	m, err := a.d.Backend().CreateRewardModel(r.Context(), edge.CallerFrom(r.Context()), usecase.TrainingRequest{
		Name: body.Name, TraceIDs: body.TraceIDs, BaseModel: body.BaseModel, Epochs: body.Epochs, MaxPairs: body.MaxPairs,
		TrainingConfig: cfg})
	return reply(w, http.StatusOK, m, err)
}

func (a *API) listRewardModels(w http.ResponseWriter, r *http.Request) error {
	ms, err := a.d.Queries.ListRewardModels(r.Context(), edge.CallerFrom(r.Context()).UserID)
	return reply(w, http.StatusOK, ms, err)
}

func (a *API) getRewardModel(w http.ResponseWriter, r *http.Request) error {
	caller := edge.CallerFrom(r.Context())
	m, err := a.d.Queries.GetRewardModel(r.Context(), caller.UserID, r.PathValue("model_id"))
	if err != nil {
		return err
	}
	err = a.d.Backend().WithMemberAgreement(r.Context(), caller, m)
	return reply(w, http.StatusOK, m, err)
}

// retryRewardModel is POST /reward-models/{id}/retry: 202, 409 unless failed.
func (a *API) retryRewardModel(w http.ResponseWriter, r *http.Request) error {
	caller := edge.CallerFrom(r.Context())
	m, err := a.d.Backend().RetryRewardModel(r.Context(), caller, r.PathValue("model_id"))
	return reply(w, http.StatusAccepted, m, err)
}

type backgroundScoringBody struct {
	Paused *bool `json:"paused"`
}

// setBackgroundScoring is PUT /reward-models/{id}/background-scoring
// {"paused": bool}: 200 with the model's background_scoring; 404 for a
// model that is not the caller's, 409 model_not_ready before it succeeded.
func (a *API) setBackgroundScoring(w http.ResponseWriter, r *http.Request) error {
	caller := edge.CallerFrom(r.Context())
	var body backgroundScoringBody
	if err := a.decodeBody(w, r, &body); err != nil {
		return err
	}
	if body.Paused == nil {
		return domain.InvalidField("paused", "paused is required (true or false)")
	}
	bg, err := a.d.Backend().SetBackgroundScoring(r.Context(), caller, r.PathValue("model_id"), *body.Paused)
	return reply(w, http.StatusOK, bg, err)
}

// weights is GET /reward-models/{id}/weights: a five-minute signed URL that
// needs no API key; 404 unless the caller owns the model and it succeeded.
func (a *API) weights(w http.ResponseWriter, r *http.Request) error {
	url, err := a.d.Backend().WeightsURL(r.Context(), a.d.Blobs, edge.CallerFrom(r.Context()), r.PathValue("model_id"))
	return reply(w, http.StatusOK, map[string]string{"url": url}, err)
}

type scoreBody struct {
	RewardModelID *string `json:"reward_model_id"`
}

// scoreTrace is POST /traces/{id}/score: 202 with the ScoringRun answering
// the request (new, active, or already completed for this revision).
func (a *API) scoreTrace(w http.ResponseWriter, r *http.Request) error {
	var body scoreBody
	if err := a.decodeBody(w, r, &body); err != nil {
		return err
	}
	run, err := a.d.Backend().ScoreTrace(r.Context(), edge.CallerFrom(r.Context()), r.PathValue("trace_id"), body.RewardModelID)
	return reply(w, http.StatusAccepted, run, err)
}
