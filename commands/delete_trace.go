package commands

import (
	"context"
)

// DeleteTrace appends trace.deleted and trace.erased, then crypto-shreds the
// trace: its data key is destroyed, so every sealed payload of its stream —
// content, annotations, comments, quotes — stops opening in the log, in
// Kafka and in backups, and its claim-checked blobs are deleted. Read models
// drop the trace; replay meets the erased events and projects nothing for
// them. Another owner's trace is not found.
//
// The facts come first and the key goes after: a failure in between leaves
// a deleted trace whose key remains (the error says so), never a live trace
// whose content is gone.
type DeleteTrace struct {
	Actor   Actor
	TraceID string
}

// DeleteTraceHandler runs DeleteTrace.
type DeleteTraceHandler struct{ *Streams }

func (c DeleteTraceHandler) Handle(ctx context.Context, cmd DeleteTrace) (Result, error) {
	return c.eraseTrace(ctx, cmd.Actor, cmd.TraceID, ErasedDeleted, cmd.Actor.String(), "trace deleted", nil)
}
