package rest

import (
	"net/http"

	"github.com/criticml/critic/domain/evaluator"
)

// getEvaluator is GET /evaluator: the shared evaluator's released version
// and benchmark figures, or "waiting for first release".
func (a *API) getEvaluator(w http.ResponseWriter, r *http.Request) error {
	p := evaluator.DefaultPolicy()
	if a.d.EvaluatorPolicy != nil {
		p = *a.d.EvaluatorPolicy
	}
	st, err := a.d.Backend().Evaluator(r.Context(), p)
	return reply(w, http.StatusOK, st, err)
}
