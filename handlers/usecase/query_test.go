package usecase_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/handlers/usecase"
	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/platform/duck"
	"github.com/criticml/critic/platform/eventstore"
	"github.com/criticml/critic/platform/pg/pgtest"
	"github.com/criticml/critic/projections/snapshot"
)

// A snapshot that has not reached the log as of the instance's start does
// not answer even an owner who never wrote (its rows may be in the part not
// applied yet); nor one that has not reached the caller's own newest event.
// An owner whose snapshot updates are parked is told so. Once the position
// reaches what the query needs, it answers.
func TestQueryAnswersOnlyFromACompleteSnapshot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	blobs, err := blob.NewLocal(t.TempDir())
	require.NoError(t, err)
	store := eventstore.New(pool, blobs)
	alice, bob := uuid.NewString(), uuid.NewString()
	seqOf := func(owner string) int64 {
		envs, err := store.Append(ctx, eventstore.Meta{Actor: "system"}, nil, []events.New{{ID: uuid.NewString(),
			Stream: "user/" + owner, OwnerID: owner, Type: "test.happened.v1", Payload: map[string]any{}}})
		require.NoError(t, err)
		var seq int64
		require.NoError(t, pool.QueryRow(ctx, "SELECT seq FROM events WHERE id = $1", envs[0].ID).Scan(&seq))
		return seq
	}
	seqOf(bob)
	start := seqOf(bob) // the log head when the instance started

	snaps, err := duck.New(t.TempDir(), duck.Options{Prewarm: -1})
	require.NoError(t, err)
	t.Cleanup(func() { _ = snaps.Close() })
	pos, err := snapshot.OpenPosition(snaps.Dir(), store.FirstAfter)
	require.NoError(t, err)
	parked := map[string]string{}
	q := usecase.NewQuery(snaps, pos, store, func(o string) (string, bool) { id, ok := parked[o]; return id, ok },
		"snapshot-test", start, 50*time.Millisecond)

	_, err = q.Run(ctx, alice, "SELECT count(*) FROM traces")
	var cu *domain.SnapshotCatchingUpError
	require.True(t, errors.As(err, &cu), "%v", err)
	require.Equal(t, domain.SnapshotCatchingUpError{Applied: 0, Needed: start}, *cu)

	require.NoError(t, pos.Processed(ctx, []int64{1, 2}))
	res, err := q.Run(ctx, alice, "SELECT count(*) FROM traces")
	require.NoError(t, err)
	require.Equal(t, [][]any{{int64(0)}}, res.Rows)

	last := seqOf(alice)
	_, err = q.Run(ctx, alice, "SELECT count(*) FROM traces")
	require.True(t, errors.As(err, &cu), "%v", err)
	require.Equal(t, domain.SnapshotCatchingUpError{Applied: start, Needed: last}, *cu)
	_, err = q.Run(ctx, bob, "SELECT count(*) FROM traces")
	require.NoError(t, err, "bob wrote nothing since: his data is complete")

	// The position moving while the query waits lets it through.
	go func() {
		time.Sleep(10 * time.Millisecond)
		_ = pos.Processed(context.Background(), []int64{last})
	}()
	slow := usecase.NewQuery(snaps, pos, store, nil, "snapshot-test", start, time.Minute)
	_, err = slow.Run(ctx, alice, "SELECT count(*) FROM traces")
	require.NoError(t, err)

	parked[alice] = "0b5f2a52-2a55-4f7a-9d4e-6f3c1b2f1a10"
	_, err = q.Run(ctx, alice, "SELECT count(*) FROM traces")
	var pe *domain.ProjectionParkedError
	require.True(t, errors.As(err, &pe), "%v", err)
	require.Equal(t, "snapshot-test", pe.Projection)
}
