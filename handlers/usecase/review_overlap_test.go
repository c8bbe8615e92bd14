package usecase_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/handlers/usecase"
	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/platform/eventstore"
	"github.com/criticml/critic/platform/pg/pgtest"
	"github.com/criticml/critic/projections/readmodel"
)

// teamFixture is an account with n imported traces (t00, t01, …) whose
// read model a test applies by hand, and a way to record a member's
// rating as members' ratings are recorded: annotation.added with the
// member as author.
type teamFixture struct {
	b      usecase.Backend
	cmds   *commands.Commands
	store  *eventstore.Store
	pool   *pgxpool.Pool
	proj   *readmodel.Projection
	actor  commands.Actor
	caller *readmodel.Caller
	ids    []string
}

func newTeamFixture(t *testing.T, n int) *teamFixture {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	blobs, err := blob.NewLocal(t.TempDir())
	require.NoError(t, err)
	store := eventstore.New(pool, blobs)
	cmds := commands.New(store)
	w := readmodel.NewWaiter(pool, 300*time.Millisecond)
	wctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	go w.Listen(wctx)
	f := &teamFixture{b: usecase.Backend{Cmds: cmds, Queries: readmodel.NewQueries(pool), Waiter: w}, cmds: cmds, store: store, pool: pool,
		proj: readmodel.New(pool, blobs, slog.New(slog.NewTextHandler(io.Discard, nil)))}
	u, err := cmds.CreateUser.Handle(ctx, commands.CreateUser{Name: "team"})
	require.NoError(t, err)
	f.actor, f.caller = commands.Actor{UserID: u.UserID}, &readmodel.Caller{UserID: u.UserID}
	var lines []string
	for i := range n {
		lines = append(lines, fmt.Sprintf(`{"id":"t%02d","title":"T%02d","steps":[{"role":"user","content":"q%d"},{"role":"assistant","content":"a%d"}]}`, i, i, i, i))
	}
	imp, err := cmds.ImportTraces.Handle(ctx, commands.ImportTraces{Actor: f.actor, Input: commands.ImportTracesInput{Format: "stash", Data: []byte(strings.Join(lines, "\n"))}})
	require.NoError(t, err)
	require.Len(t, imp.TraceIDs, n)
	f.ids = imp.TraceIDs
	f.catchUp(t)
	return f
}

// catchUp applies every stored event to the read model.
func (f *teamFixture) catchUp(t *testing.T) {
	t.Helper()
	all, err := f.store.ReadAfter(context.Background(), 0, 100000)
	require.NoError(t, err)
	require.NoError(t, f.proj.Apply(context.Background(), all))
}

// rate records member's whole-trace rating and applies it.
func (f *teamFixture) rate(t *testing.T, member, traceID string, rating int) {
	t.Helper()
	ctx := context.Background()
	stream := events.TraceStream(traceID)
	loaded, err := f.store.LoadStreams(ctx, []string{stream})
	require.NoError(t, err)
	evs := loaded[stream]
	_, err = f.store.Append(ctx, eventstore.Meta{Actor: "user:" + member}, map[string]int64{stream: evs[len(evs)-1].Version}, []events.New{{
		ID: uuid.NewString(), Stream: stream, OwnerID: f.caller.UserID, Type: events.AnnotationAdded,
		Payload: events.AnnotationAddedV1{AnnotationID: uuid.NewString(), TraceID: traceID, Rating: &rating, AuthorID: member, AuthorName: "name of " + member, TraceRevision: 1},
	}})
	require.NoError(t, err)
	f.catchUp(t)
}

// TestReviewQueueOverlapTwoWithThreeReviewers: with overlap 2, three
// reviewers taking the first item of their own queue in turn until every
// queue is empty leave each of 20 traces judged by exactly two of them;
// no queue offers a member what they judged; with overlap 1 (the default)
// one judgment takes an item out of every queue. The judgments are
// annotation.added events with the reviewer as author, as members' ratings
// are recorded, applied to the read model.
func TestReviewQueueOverlapTwoWithThreeReviewers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newTeamFixture(t, 20)
	b, cmds, actor, caller := f.b, f.cmds, f.actor, f.caller
	catchUp := func() { f.catchUp(t) }
	judge := func(member, traceID string) { f.rate(t, member, traceID, 1) }
	queue := func(member string) []string {
		q, err := b.ReviewQueue(ctx, caller, member, "", usecase.DefaultReviewLimit)
		require.NoError(t, err)
		var ids []string
		for _, it := range q.Items {
			ids = append(ids, it.TraceID)
		}
		return ids
	}
	reviewers := []string{uuid.NewString(), uuid.NewString(), uuid.NewString()}
	catchUp()

	// Overlap 1 (the default): the first reviewer's judgment takes the
	// item out of everyone's queue.
	require.Len(t, queue(reviewers[1]), 20)
	judge(reviewers[0], f.ids[0])
	for _, r := range reviewers {
		require.NotContains(t, queue(r), f.ids[0])
		require.Len(t, queue(r), 19)
	}

	// Overlap 2: the item goes back to the two who have not judged it.
	_, err := cmds.SetReviewOverlap.Handle(ctx, commands.SetReviewOverlap{Actor: actor})
	var ve *domain.ValidationError
	require.ErrorAs(t, err, &ve)
	require.Equal(t, "overlap", ve.Field)
	_, err = cmds.SetReviewOverlap.Handle(ctx, commands.SetReviewOverlap{Actor: actor, Overlap: 2})
	require.NoError(t, err)
	catchUp()
	require.Len(t, queue(reviewers[1]), 20)
	require.Len(t, queue(reviewers[0]), 19)
	// A member who rates an item again still counts once.
	judge(reviewers[0], f.ids[0])
	require.Contains(t, queue(reviewers[1]), f.ids[0])
	require.NotContains(t, queue(reviewers[0]), f.ids[0])

	judgedBy := map[string][]string{f.ids[0]: {reviewers[0]}}
	for turns := 0; ; turns++ {
		require.Less(t, turns, 200, "the queues never emptied")
		took := false
		for _, r := range reviewers {
			q := queue(r)
			if len(q) == 0 {
				continue
			}
			for _, id := range q {
				require.NotContains(t, judgedBy[id], r, "a queue offered %s a trace they judged", r)
				require.Less(t, len(judgedBy[id]), 2, "a queue offered a trace judged twice")
			}
			judge(r, q[0])
			judgedBy[q[0]] = append(judgedBy[q[0]], r)
			took = true
		}
		if !took {
			break
		}
	}
	perReviewer := map[string]int{}
	for _, id := range f.ids {
		require.Len(t, judgedBy[id], 2, "trace %s", id)
		require.NotEqual(t, judgedBy[id][0], judgedBy[id][1])
		for _, r := range judgedBy[id] {
			perReviewer[r]++
		}
	}
	// Three reviewers share 40 judgments: each did about a third.
	for _, r := range reviewers {
		require.InDelta(t, 13, perReviewer[r], 1, "reviewer %s", r)
	}
	// The read model agrees: every trace has exactly two whole-trace
	// ratings, by two members; the account's own queue is empty too.
	var wrong int
	require.NoError(t, f.pool.QueryRow(ctx, `SELECT count(*) FROM rm_traces t WHERE t.owner_id = $1 AND
		(SELECT count(DISTINCT a.author_id) FROM rm_annotations a WHERE a.trace_id = t.id AND a.step_id IS NULL AND a.rating IS NOT NULL) <> 2`, caller.UserID).Scan(&wrong))
	require.Zero(t, wrong)
	require.Empty(t, queue(caller.UserID))
}
