package snapshot

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/platform/eventstore"
	"github.com/criticml/critic/platform/pg"
	"github.com/criticml/critic/platform/pg/pgtest"
)

func newStore(t *testing.T) *eventstore.Store {
	t.Helper()
	pool, err := pg.Connect(context.Background(), pgtest.NewDatabase(t))
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	blobs, err := blob.NewLocal(t.TempDir())
	require.NoError(t, err)
	return eventstore.New(pool, blobs)
}

// appendN appends n events of owner and returns their seqs.
func appendN(t *testing.T, s *eventstore.Store, owner string, n int) []int64 {
	t.Helper()
	var out []int64
	for range n {
		envs, err := s.Append(context.Background(), eventstore.Meta{Actor: "system"}, nil, []events.New{{
			ID: uuid.NewString(), Stream: "trace/" + uuid.NewString(), OwnerID: owner, Type: "test.happened.v1", Payload: map[string]any{}}})
		require.NoError(t, err)
		var seq int64
		require.NoError(t, s.Pool().QueryRow(context.Background(), "SELECT seq FROM events WHERE id = $1", envs[0].ID).Scan(&seq))
		out = append(out, seq)
	}
	return out
}

// The position only moves over seqs that were dealt with, in log order,
// whatever order partitions deliver them in; it steps over a gap the log
// proves permanent; it survives a restart with what was pending; and
// WaitFor answers how far it is.
func TestPositionIsContiguousAndDurable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := newStore(t)
	owner := uuid.NewString()
	seqs := appendN(t, store, owner, 3) // 1 2 3
	// A gap: a sequence number taken by an append that never committed.
	_, err := store.Pool().Exec(ctx, "SELECT nextval(pg_get_serial_sequence('events', 'seq'))")
	require.NoError(t, err)
	seqs = append(seqs, appendN(t, store, owner, 2)...) // 5 6
	require.Equal(t, []int64{1, 2, 3, 5, 6}, seqs)

	dir := t.TempDir()
	p, err := OpenPosition(dir, store.FirstAfter)
	require.NoError(t, err)
	require.False(t, p.Known())
	require.Equal(t, int64(0), p.Applied())

	// Another partition delivers 3 and 6 first: nothing below is proven.
	require.NoError(t, p.Processed(ctx, []int64{3, 6}))
	require.Equal(t, int64(0), p.Applied())
	require.True(t, p.Known())
	applied, pending, stuck := p.Stuck(0)
	require.Equal(t, []any{int64(0), 2, true}, []any{applied, pending, stuck}, "3 and 6 wait behind the missing 1")
	_, _, stuck = p.Stuck(time.Hour)
	require.False(t, stuck, "not for an hour yet")
	require.NoError(t, p.Processed(ctx, []int64{1}))
	require.Equal(t, int64(1), p.Applied())

	// A restart (kill -9: nothing but the file survives) keeps 3 and 6
	// pending, even though their bus offsets may be committed.
	p, err = OpenPosition(dir, store.FirstAfter)
	require.NoError(t, err)
	require.True(t, p.Known())
	require.Equal(t, int64(1), p.Applied())
	require.NoError(t, p.Processed(ctx, []int64{2}))
	require.Equal(t, int64(3), p.Applied(), "2 and the pending 3")
	require.NoError(t, p.Processed(ctx, []int64{5}))
	require.Equal(t, int64(6), p.Applied(), "over the permanent gap at 4, then the pending 6")
	require.NoError(t, p.Processed(ctx, []int64{2, 5})) // redelivered: no change
	require.Equal(t, int64(6), p.Applied())
	_, pending, stuck = p.Stuck(0)
	require.Equal(t, []any{0, false}, []any{pending, stuck})

	// WaitFor: at once when reached, a catching-up error naming both
	// positions when not, and woken by progress.
	require.NoError(t, p.WaitFor(ctx, 6))
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	err = p.WaitFor(short, 7)
	var cu *domain.SnapshotCatchingUpError
	require.True(t, errors.As(err, &cu), "%v", err)
	require.Equal(t, domain.SnapshotCatchingUpError{Applied: 6, Needed: 7}, *cu)
	require.Contains(t, err.Error(), "catching up")

	seven := appendN(t, store, owner, 1)
	done := make(chan error, 1)
	go func() { done <- p.WaitFor(ctx, seven[0]) }()
	require.NoError(t, p.Processed(ctx, seven))
	require.NoError(t, <-done)
}

// CatchUp applies the log from the position to the target through the
// applier and leaves the position there; on an empty log it records 0.
func TestCatchUpFromTheLog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := newStore(t)
	p, err := OpenPosition(t.TempDir(), store.FirstAfter)
	require.NoError(t, err)
	require.NoError(t, CatchUp(ctx, store, func(context.Context, []events.Envelope) error { return nil }, p, 0))
	require.True(t, p.Known())

	seqs := appendN(t, store, uuid.NewString(), 5)
	got, apply := recordingApplier(p)
	require.NoError(t, CatchUp(ctx, store, apply, p, seqs[3]))
	require.Equal(t, seqs, *got, "the batch read reaches past the target; all of it is applied")
	require.Equal(t, seqs[4], p.Applied())
}

// A position stuck behind an event the bus never delivered (2 and 3 seen,
// 1 lost) is completed by catching up from the log: the missing event is
// read and applied, the ones already applied are handed over again (the
// projection's dedupe skips them), and the position reaches the head.
func TestCatchUpCompletesAStuckPosition(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := newStore(t)
	p, err := OpenPosition(t.TempDir(), store.FirstAfter)
	require.NoError(t, err)
	seqs := appendN(t, store, uuid.NewString(), 3)
	require.NoError(t, p.Processed(ctx, seqs[1:]))
	applied, pending, stuck := p.Stuck(0)
	require.Equal(t, []any{int64(0), 2, true}, []any{applied, pending, stuck})

	got, apply := recordingApplier(p)
	head, err := store.Head(ctx)
	require.NoError(t, err)
	require.NoError(t, CatchUp(ctx, store, apply, p, head))
	require.Equal(t, seqs, *got)
	require.Equal(t, seqs[2], p.Applied())
	_, pending, stuck = p.Stuck(0)
	require.Equal(t, []any{0, false}, []any{pending, stuck})
}

// recordingApplier applies a log batch by reporting its seqs to the
// position, and records them in order.
func recordingApplier(p *Position) (*[]int64, LogApplier) {
	var got []int64
	return &got, func(ctx context.Context, envs []events.Envelope) error {
		var s []int64
		for _, e := range envs {
			s = append(s, e.Seq)
		}
		got = append(got, s...)
		return p.Processed(ctx, s)
	}
}

// A query waiting for an event the snapshot has not applied closes Hurry's
// channel (the projection then stops gathering its batch); once the
// position moves past it a new, open channel takes its place. A query whose
// events are applied already hurries nothing.
func TestWaitingQueryHurriesTheProjection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := newStore(t)
	p, err := OpenPosition(t.TempDir(), store.FirstAfter)
	require.NoError(t, err)
	seqs := appendN(t, store, uuid.NewString(), 2)
	require.NoError(t, p.Processed(ctx, seqs[:1]))

	require.NoError(t, p.WaitFor(ctx, seqs[0]))
	hurry := p.Hurry()
	select {
	case <-hurry:
		t.Fatal("no query waits, yet the projection is hurried")
	default:
	}

	done := make(chan error, 1)
	go func() { done <- p.WaitFor(ctx, seqs[1]) }()
	select {
	case <-hurry:
	case <-time.After(30 * time.Second):
		t.Fatal("a waiting query did not hurry the projection")
	}
	require.NoError(t, p.Processed(ctx, seqs[1:]))
	require.NoError(t, <-done)
	select {
	case <-p.Hurry():
		t.Fatal("the position moved and nobody waits, yet the projection is still hurried")
	default:
	}
}
