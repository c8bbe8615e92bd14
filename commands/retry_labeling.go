package commands

import (
	"cmp"
	"context"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/labels"
	"github.com/criticml/critic/domain/traces"
)

// RetryLabeling asks for a trace's missing labels again (after a failed
// run): it appends trace.labeling_requested, which the dispatch projection
// turns into a label job. Labels already recorded are kept, so only the
// chunks still without one cost a model call. Without a step-label model
// configured it is refused with the variable to set.
type RetryLabeling struct {
	Actor   Actor
	TraceID string
}

// RetryLabelingHandler runs RetryLabeling.
type RetryLabelingHandler struct {
	*Streams
	model stepLabelPlan
}

func (c RetryLabelingHandler) Handle(ctx context.Context, cmd RetryLabeling) (Result, error) {
	return c.requestLabels(ctx, c.model, cmd.Actor, cmd.TraceID, false)
}

// stepLabelPlan is the deployment's step-label model (a LiteLLM model
// string), or why there is none: what labeling requests are refused with.
type stepLabelPlan struct{ model, unavailable string }

// requestLabels appends a labeling request for the trace (every chunk anew
// when relabel) if the deployment labels steps and the trace has chunks to
// label.
func (c *Streams) requestLabels(ctx context.Context, plan stepLabelPlan, actor Actor, traceID string, relabel bool) (Result, error) {
	return c.onTrace(ctx, actor, traceID, func(s traces.State) (string, any, error) {
		if plan.model == "" { // after the owner check: another owner's trace is a 404
			reason := cmp.Or(plan.unavailable, "no step-label model is configured; set CRITIC_STEP_LABEL_MODEL and its provider's key")
			return "", nil, &domain.UnavailableError{Message: reason}
		}
		steps := s.StepList()
		lab := labels.FromSteps(steps, nil)
		switch {
		case lab.Present:
			return "", nil, &domain.ConflictError{Code: "labels_imported", Message: "the trace carries its own labels (steps[].metadata.label); they are used as they are and never sent to a model"}
		case !labels.AgentResponded(steps):
			return "", nil, &domain.ConflictError{Code: "nothing_to_label", Message: "the agent has not responded yet: a trace is labeled once it has an assistant step"}
		case !relabel && len(labels.ToLabel(lab.Chunks, s.CurrentLabels())) == 0:
			return "", nil, &domain.ConflictError{Code: "nothing_to_label", Message: "every complete chunk of the trace has a label already; POST /traces/{id}/labeling/rescore labels them anew"}
		}
		return events.TraceLabelingRequested, events.TraceLabelingRequestedV1{TraceID: traceID, Revision: s.Revision, Relabel: relabel}, nil
	})
}
