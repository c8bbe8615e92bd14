package rest

import "net/http"

// getEvaluator is GET /evaluator: the shared evaluator's released version
// and benchmark figures, or "waiting for first release".
func (a *API) getEvaluator(w http.ResponseWriter, r *http.Request) error {
	st, err := a.d.Backend().Evaluator(r.Context(), a.d.EvaluatorPolicy)
	return reply(w, http.StatusOK, st, err)
}
