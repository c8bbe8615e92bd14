package commands

import (
	"context"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/traces"
)

// RecordStepLabels appends a labeling model's labels for chunks of a trace
// (trace.steps_labeled) once they pass traces.DecideStepLabels. The labeler
// runs in the worker tier and reports through the API's worker service, so
// a worker may record labels for any owner's trace; a user only for their
// own. Every reader (GET /traces/{id}, /query) scores them like imported
// labels.
type RecordStepLabels struct {
	Actor  Actor
	Labels traces.StepLabelsInput
}

// RecordStepLabelsHandler runs RecordStepLabels.
type RecordStepLabelsHandler struct{ *Streams }

func (c RecordStepLabelsHandler) Handle(ctx context.Context, cmd RecordStepLabels) (Result, error) {
	return c.onTrace(ctx, cmd.Actor, cmd.Labels.TraceID, func(st traces.State) (string, any, error) {
		ev, err := traces.DecideStepLabels(st, cmd.Labels)
		return events.TraceStepsLabeled, ev, err
	})
}

// WorkerActor is the actor of a worker reporting through the worker
// service (the step labeler among them).
func WorkerActor(id string) Actor { return Actor{worker: id} }
