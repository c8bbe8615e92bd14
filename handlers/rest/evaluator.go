package rest

import (
	"net/http"

	"github.com/criticml/critic/domain/evaluator"
)

// WithEvaluatorPolicy sets the release policy GET /evaluator reports
// (CRITIC_EVALUATOR_MIN_SLICE, CRITIC_EVALUATOR_SLICE_TOLERANCE); without it
// the spec defaults apply.
func (a *API) WithEvaluatorPolicy(p evaluator.Policy) *API {
	a.evaluatorPolicy = &p
	return a
}

// getEvaluator is GET /evaluator: the shared evaluator's released version
// and benchmark figures, or "waiting for first release".
func (a *API) getEvaluator(w http.ResponseWriter, r *http.Request) error {
	p := evaluator.DefaultPolicy()
	if a.evaluatorPolicy != nil {
		p = *a.evaluatorPolicy
	}
	st, err := a.backend().Evaluator(r.Context(), p)
	return reply(w, http.StatusOK, st, err)
}
