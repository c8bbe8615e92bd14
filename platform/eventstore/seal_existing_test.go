package eventstore_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/platform/eventstore"
)

// SealExisting seals what Append would seal and was stored in clear: a
// finding under its trace's key with a redacted copy, so erasing the trace
// redacts it; the events of a trace erased while they were in clear are
// shredded (they read as erased); auth's streams stay in clear.
func TestSealExistingFindingsAndErasedTraces(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sealing, ring, dir := newSealingStore(t)
	clear := eventstore.New(sealing.Pool(), sealing.Blobs())
	owner, traceID, gone := uuid.NewString(), uuid.NewString(), uuid.NewString()
	quote := "QUOTE-of-the-trace"
	finding := ev(events.RewardModelStream(uuid.NewString()), events.RewardModelFindingRecorded, events.RewardModelFindingRecordedV1{
		ModelID: "m", Attempt: 1, TraceID: traceID, Finding: events.Finding{ID: "f1", TraceID: traceID, Label: "negative", Outcome: events.OutcomePair,
			EvidenceQuote: &quote, OriginalAction: "QUOTE action"}})
	finding.OwnerID = owner
	old := ev(events.TraceStream(gone), events.TraceImported, map[string]string{"text": "GONE-marker"})
	user := ev("user/"+owner, "user.created.v1", map[string]string{"name": "clear-name"})
	_, err := clear.Append(ctx, eventstore.Meta{Actor: "system"}, nil, []events.New{finding, old, user})
	require.NoError(t, err)
	// The trace was deleted with encryption on, after its import in clear.
	require.NoError(t, sealing.EraseStream(ctx, events.TraceStream(gone)))

	n, err := sealing.SealExisting(ctx, 1, nil)
	require.NoError(t, err)
	require.Equal(t, 2, n, "the finding and the erased trace's import; not the user")
	var dump string
	require.NoError(t, sealing.Pool().QueryRow(ctx, "SELECT string_agg(payload::text, ' ') FROM events").Scan(&dump))
	require.NotContains(t, dump, "QUOTE")
	require.NotContains(t, dump, "GONE-marker")
	require.Contains(t, dump, "clear-name")
	noMarker(t, dir, "QUOTE")

	stored, err := sealing.ReadAfter(ctx, 0, 10)
	require.NoError(t, err)
	_, err = sealing.Open(ctx, stored[1])
	require.True(t, eventstore.IsErased(err), "the erased trace's leftover reads as erased: %v", err)
	read := func() events.RewardModelFindingRecordedV1 {
		opened, err := eventstore.Resolve(ctx, sealing.Blobs(), ring, stored[0])
		require.NoError(t, err)
		var p events.RewardModelFindingRecordedV1
		require.NoError(t, opened.Decode(&p))
		return p
	}
	require.Equal(t, quote, *read().Finding.EvidenceQuote)
	require.NoError(t, sealing.EraseStream(ctx, events.TraceStream(traceID)))
	require.True(t, read().Finding.Erased, "erasing the trace redacts the finding")
	require.Nil(t, read().Finding.EvidenceQuote)

	n, err = sealing.SealExisting(ctx, 1, nil)
	require.NoError(t, err)
	require.Zero(t, n, "a second run seals nothing")
}
