package rest

import (
	"net/http"

	"github.com/criticml/critic/handlers/edge"
	"github.com/criticml/critic/handlers/usecase"
)

type gepaBody struct {
	RewardModelID   *string `json:"reward_model_id"`
	TaskModel       *string `json:"task_model"`
	TaskAPIBase     *string `json:"task_api_base"`
	TaskAPIKey      *string `json:"task_api_key"`
	ReflectionModel *string `json:"reflection_model"`
	MaxMetricCalls  *int    `json:"max_metric_calls"`
}

// createGepaRun is POST /gepa-runs: the queued GepaRun; another owner's
// model 404, a model that has not succeeded 422, unknown fields 422.
func (a *API) createGepaRun(w http.ResponseWriter, r *http.Request) error {
	var body gepaBody
	if err := a.decodeBody(w, r, &body); err != nil {
		return err
	}
	run, err := a.d.Backend().CreateGepaRun(r.Context(), edge.CallerFrom(r.Context()), usecase.GepaRequest{RewardModelID: body.RewardModelID,
		TaskModel: body.TaskModel, TaskAPIBase: body.TaskAPIBase, TaskAPIKey: body.TaskAPIKey, ReflectionModel: body.ReflectionModel, MaxMetricCalls: body.MaxMetricCalls})
	return reply(w, http.StatusOK, run, err)
}

func (a *API) listGepaRuns(w http.ResponseWriter, r *http.Request) error {
	runs, err := a.d.Queries.ListGepaRuns(r.Context(), edge.CallerFrom(r.Context()).UserID)
	return reply(w, http.StatusOK, runs, err)
}

func (a *API) getGepaRun(w http.ResponseWriter, r *http.Request) error {
	run, err := a.d.Queries.GetGepaRun(r.Context(), edge.CallerFrom(r.Context()).UserID, r.PathValue("run_id"))
	return reply(w, http.StatusOK, run, err)
}

// gepaSkill is GET /gepa-runs/{id}/skill: the best skill as a SKILL.md
// attachment; 404 until the run succeeds.
func (a *API) gepaSkill(w http.ResponseWriter, r *http.Request) error {
	skill, err := a.d.Backend().GepaSkill(r.Context(), edge.CallerFrom(r.Context()), r.PathValue("run_id"))
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="SKILL.md"`)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(skill))
	return nil
}
