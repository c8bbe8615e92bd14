package eventstore_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/platform/eventstore"
	"github.com/criticml/critic/platform/pg/pgtest"
)

func newStore(t *testing.T) *eventstore.Store {
	pool := pgtest.NewPool(t)
	blobs, err := blob.NewLocal(t.TempDir())
	require.NoError(t, err)
	return eventstore.New(pool, blobs)
}

func ev(stream, typ string, payload any) events.New {
	return events.New{ID: uuid.NewString(), Stream: stream, OwnerID: "00000000-0000-0000-0000-000000000001", Type: typ, Payload: payload}
}

func TestAppendAssignsVersionsAcrossStreamsAtomically(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	meta := eventstore.Meta{Actor: "system"}

	envs, err := s.Append(ctx, meta, map[string]int64{"a": 0, "b": 0},
		[]events.New{ev("a", "x.v1", map[string]int{"n": 1}), ev("a", "x.v1", map[string]int{"n": 2}), ev("b", "y.v1", nil)})
	require.NoError(t, err)
	require.Equal(t, []int64{1, 2, 1}, []int64{envs[0].Version, envs[1].Version, envs[2].Version})

	// A conflict on one stream rejects the whole append: b must not move.
	_, err = s.Append(ctx, meta, map[string]int64{"a": 1, "b": 1},
		[]events.New{ev("a", "x.v1", nil), ev("b", "y.v1", nil)})
	var conflict *domain.VersionConflictError
	require.ErrorAs(t, err, &conflict)
	require.Equal(t, "a", conflict.Stream)
	require.Equal(t, int64(2), conflict.Actual)

	loaded, err := s.LoadStreams(ctx, []string{"a", "b"})
	require.NoError(t, err)
	require.Len(t, loaded["a"], 2)
	require.Len(t, loaded["b"], 1)
	require.JSONEq(t, `{"n":2}`, string(loaded["a"][1].Payload))
	n, err := s.Count(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(3), n)
}

// TestAppendChecksStreamsItDoesNotWrite: a stream the caller decided on
// but does not write (an import's unchanged trace) is checked at the
// version it was read at, like the streams written: it neither reads as
// empty (every such append failed) nor goes unchecked.
func TestAppendChecksStreamsItDoesNotWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	meta := eventstore.Meta{Actor: "system"}
	_, err := s.Append(ctx, meta, map[string]int64{"a": 0, "b": 0}, []events.New{ev("a", "x.v1", nil), ev("a", "x.v1", nil), ev("b", "y.v1", nil)})
	require.NoError(t, err)

	envs, err := s.Append(ctx, meta, map[string]int64{"a": 2, "b": 1}, []events.New{ev("b", "y.v1", nil)})
	require.NoError(t, err, "a is at 2 as read, though nothing is written to it")
	require.Equal(t, int64(2), envs[0].Version)

	_, err = s.Append(ctx, meta, map[string]int64{"a": 1, "b": 2}, []events.New{ev("b", "y.v1", nil)})
	var conflict *domain.VersionConflictError
	require.ErrorAs(t, err, &conflict, "a moved since it was read")
	require.Equal(t, "a", conflict.Stream)
	require.Equal(t, int64(2), conflict.Actual)

	_, err = s.Append(ctx, meta, map[string]int64{"c": 0, "b": 2}, []events.New{ev("b", "y.v1", nil)})
	require.NoError(t, err, "c read as empty and still empty")
}

func TestEventsAreImmutable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	_, err := s.Append(ctx, eventstore.Meta{Actor: "system"}, nil, []events.New{ev("a", "x.v1", nil)})
	require.NoError(t, err)
	_, err = s.Pool().Exec(ctx, "UPDATE events SET type = 'tampered'")
	require.ErrorContains(t, err, "events are immutable")
	_, err = s.Pool().Exec(ctx, "DELETE FROM events")
	require.ErrorContains(t, err, "events are immutable")
}

func TestLargePayloadGoesToBlobStoreWithChecksum(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	big := map[string]string{"text": strings.Repeat("x", eventstore.MaxInlinePayload+10)}
	envs, err := s.Append(ctx, eventstore.Meta{Actor: "system"}, nil, []events.New{ev("big", "x.v1", big)})
	require.NoError(t, err)

	var inRow []byte
	require.NoError(t, s.Pool().QueryRow(ctx, "SELECT payload::text FROM events WHERE id = $1", envs[0].ID).Scan(&inRow))
	require.Less(t, len(inRow), 1024, "the row holds only the claim check")
	require.Contains(t, string(inRow), `"sha256"`)

	loaded, err := s.LoadStreams(ctx, []string{"big"})
	require.NoError(t, err)
	var got map[string]string
	require.NoError(t, loaded["big"][0].Decode(&got))
	require.Equal(t, big["text"], got["text"])

	// A tampered blob is detected, never served.
	require.NoError(t, s.Blobs().Put(ctx, "events/"+envs[0].ID+".json", []byte(`{"text":"tampered"}`)))
	_, err = s.LoadStreams(ctx, []string{"big"})
	require.ErrorContains(t, err, "SHA-256")
}
