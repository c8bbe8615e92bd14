package commands

import (
	"context"
	"time"

	"github.com/criticml/critic/domain/events"
)

// OpenEvent opens a stored event's payload (claim check, seal) with the
// store's blob store and keyring: how a consumer that holds the commands
// (dispatch) reads a trace's events. An erased one is *events.ErasedError.
func (c *Commands) OpenEvent(ctx context.Context, e events.Envelope) (events.Envelope, error) {
	return c.store.Open(ctx, e)
}

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
func (c *Commands) DeleteTrace(ctx context.Context, actor Actor, traceID string) (Result, error) {
	r, err := retryOnConflict(func() (Result, error) {
		st, err := c.ownedTrace(ctx, actor, traceID)
		if err != nil {
			return Result{}, err
		}
		stream := events.TraceStream(st.ID)
		return c.append(ctx, actor, map[string]int64{stream: st.Version}, []events.New{
			{ID: newID(), Stream: stream, OwnerID: actor.UserID, Type: events.TraceDeleted, Payload: events.TraceDeletedV1{TraceID: traceID}},
			{ID: newID(), Stream: stream, OwnerID: actor.UserID, Type: events.TraceErased, Payload: events.TraceErasedV1{
				TraceID: traceID, By: actor.String(), Reason: "trace deleted", At: time.Now().UTC().Format(time.RFC3339)}},
		})
	})
	if err != nil {
		return r, err
	}
	if err := c.store.EraseStream(ctx, events.TraceStream(traceID)); err != nil {
		return r, err
	}
	return r, c.eraseDatasets(ctx, actor.UserID, traceID)
}
