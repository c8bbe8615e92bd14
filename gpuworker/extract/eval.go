package extract

import (
	"context"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/feedback"
	"github.com/criticml/critic/platform/llm"
)

// EvalResult is one case of the synthetic evaluation.
type EvalResult struct {
	Case   feedback.EvalCase
	Passed bool
	Got    string // label/confidence → outcome, or the error
	Usage  llm.Usage
}

// Evaluate runs the suite's human-feedback classification against the
// configured model, with all criteria (no rubric dropout), as
// `critic eval feedback` does. A case whose call fails counts as failed
// and says why.
func (x *Extractor) Evaluate(ctx context.Context, cases []feedback.EvalCase) []EvalResult {
	out := make([]EvalResult, len(cases))
	model := x.LLM.Model().String()
	hash := feedback.ConfigHash(feedback.DefaultCriteria)
	for i, c := range cases {
		out[i].Case = c
		targets := feedback.Targets(c.Trace)
		if len(targets) == 0 {
			out[i].Got = "the case has no target"
			continue
		}
		f, _, u, err := x.Classify(ctx, targets[0], feedback.DefaultCriteria, hash, model)
		out[i].Usage = u
		if err != nil {
			out[i].Got = "error: " + err.Error()
			continue
		}
		out[i].Passed, out[i].Got = c.Passed([]events.Finding{f})
	}
	return out
}
