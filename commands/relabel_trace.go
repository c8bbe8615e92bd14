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
func (c *Commands) RelabelTrace(ctx context.Context, actor Actor, traceID string) (Result, error) {
	return c.requestLabels(ctx, actor, traceID, true)
}
