package dispatch

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/projections/readmodel"
)

// cursorQueries is one ready model whose candidate looks are recorded: each
// answers the next of unsettled (nil: everything settled) and no candidate.
type cursorQueries struct {
	now       time.Time
	unsettled []*readmodel.BackgroundCursor
	froms     []readmodel.BackgroundCursor
}

func (q *cursorQueries) DBNow(context.Context) (time.Time, error) { return q.now, nil }

func (q *cursorQueries) BackgroundModels(context.Context) ([]readmodel.BackgroundModel, error) {
	return []readmodel.BackgroundModel{{ID: "m", OwnerID: "o"}}, nil
}

func (q *cursorQueries) BackgroundCandidates(_ context.Context, _, _ string, _ time.Time, from readmodel.BackgroundCursor, _ []string, _ int) ([]string, *readmodel.BackgroundCursor, error) {
	q.froms = append(q.froms, from)
	u := q.unsettled[0]
	q.unsettled = q.unsettled[1:]
	return nil, u, nil
}

// A model's next look starts at the first trace its last look found still
// to score, or lookBehind short of the debounce's edge when it found none;
// never back; and from the beginning again once fullLookEvery has passed.
func TestEachLookStartsWhereTheLastFoundWorkLeft(t *testing.T) {
	clock := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	debounce := 30 * time.Second
	early := &readmodel.BackgroundCursor{UpdatedAt: clock.Add(-time.Hour), TraceID: "01a00000-0000-0000-0000-000000000001"}
	q := &cursorQueries{now: clock, unsettled: []*readmodel.BackgroundCursor{early, nil, nil, early, nil, nil}}
	s := &scheduler{q: q, debounce: debounce, log: slog.New(slog.DiscardHandler), noActions: map[string]map[string]bool{},
		cursors: map[string]modelCursor{}, now: func() time.Time { return clock }}

	s.pass(context.Background(), nil)
	require.Equal(t, readmodel.BackgroundCursor{}, q.froms[0], "the first look is at every trace")
	s.pass(context.Background(), nil)
	require.Equal(t, *early, q.froms[1], "the next starts at the trace still to score")

	clock = clock.Add(time.Minute)
	q.now = clock
	s.pass(context.Background(), nil) // nothing left: the cursor moves up to lookBehind short of the debounce's edge
	edge := readmodel.BackgroundCursor{UpdatedAt: clock.Add(-debounce - lookBehind)}
	s.pass(context.Background(), nil) // (answers a trace behind the cursor)
	require.Equal(t, edge, q.froms[3])
	s.pass(context.Background(), nil)
	require.Equal(t, edge, q.froms[4], "the cursor never moves back")

	clock = clock.Add(fullLookEvery)
	q.now = clock
	s.pass(context.Background(), nil)
	require.Equal(t, readmodel.BackgroundCursor{}, q.froms[5], "every fullLookEvery a look is at every trace again")
	require.Empty(t, q.unsettled)
}
