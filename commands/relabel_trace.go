package commands

import (
	"context"
)

// RelabelTrace is the viewer's rescore control (spec 001 "Trace messages":
// it "reruns automatic labels and scores"): every chunk of the current
// revision is labeled anew, not only those without a label. The recorded
// labels stay in use until the new ones supersede them chunk by chunk, so
// the trace never loses its scores in between, and replay gives the same
// labels because the new answers are events like the old.
type RelabelTrace struct {
	Actor   Actor
	TraceID string
}

// RelabelTraceHandler runs RelabelTrace.
type RelabelTraceHandler struct {
	*Streams
	model stepLabelPlan
}

func (c RelabelTraceHandler) Handle(ctx context.Context, cmd RelabelTrace) (Result, error) {
	return c.requestLabels(ctx, c.model, cmd.Actor, cmd.TraceID, true)
}
