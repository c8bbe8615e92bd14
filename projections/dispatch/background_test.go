package dispatch_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/commands/commandstest"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/platform/eventstore"
	"github.com/criticml/critic/platform/pg/pgtest"
	"github.com/criticml/critic/projections/dispatch"
	"github.com/criticml/critic/projections/readmodel"
)

// TestAFinishedBatchIsRefilledAtOnce: background scoring's tick is an
// hour here, so after its first look only a batch's end can start the next
// one. Two batches of a ready model fill both slots; when a worker (played
// through the worker service's commands) reports the first batch's last
// trace, the dispatch projection wakes the scheduler, which requests the
// third batch once the read model counts the first as ended — and not
// before: one trace still running keeps the slot taken.
func TestAFinishedBatchIsRefilledAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := readyModel(t, "refill")
	pool, store, blobs, cmds, q, discard, wake, actor := f.pool, f.store, f.blobs, f.cmds, f.q, f.discard, f.wake, f.actor
	var lines []string
	for i := range 3 * commands.MaxBatchTraces {
		lines = append(lines, fmt.Sprintf(`{"id":"new-%d","steps":[{"role":"user","content":"q%d"},{"role":"assistant","content":"answer %d"}]}`, i, i, i))
	}
	_, err := cmds.ImportTraces.Handle(ctx, commands.ImportTraces{Actor: actor, Input: commands.ImportTracesInput{Format: "stash", Data: []byte(strings.Join(lines, "\n"))}})
	require.NoError(t, err)

	// The bus's part, in order: every new event to the read model, then to
	// the dispatch projection.
	pctx, stop := context.WithCancel(ctx)
	defer stop()
	pumped := f.pump(pctx)
	waiter := readmodel.NewWaiter(pool, 30*time.Second)
	go waiter.Listen(pctx)
	require.Eventually(t, func() bool { // the read model has the ready model and its traces
		ids, _, err := q.BackgroundCandidates(ctx, f.userID, f.modelID, time.Now().Add(time.Hour), readmodel.BackgroundCursor{}, nil, 100)
		return err == nil && len(ids) == len(f.ratedIDs)+len(lines)
	}, 30*time.Second, 20*time.Millisecond)
	scheduled := make(chan error, 1)
	go func() {
		scheduled <- dispatch.RunBackgroundScoring(pctx, q, cmds, wake, waiter, time.Hour, 0, discard)
	}()

	batches := func() []events.ScoringBatchRequestedV1 {
		evs, err := store.ReadAfter(ctx, 0, 100000)
		require.NoError(t, err)
		var out []events.ScoringBatchRequestedV1
		for _, e := range evs {
			if e.Type == events.ScoringBatchRequested {
				var p events.ScoringBatchRequestedV1
				require.NoError(t, e.Decode(&p))
				out = append(out, p)
			}
		}
		return out
	}
	require.Eventually(t, func() bool { return len(batches()) == 2 }, 30*time.Second, 20*time.Millisecond, "the first look fills both slots")

	// The worker claims the first batch and reports all but one trace.
	b := batches()[0]
	job, err := json.Marshal(jobs.ScoreBatchJob{BatchID: b.BatchID, ModelID: f.modelID})
	require.NoError(t, err)
	out, err := cmds.Job.Handle(ctx, commands.Job{Kind: jobs.KindScoreBatch, ID: b.BatchID, Action: jobs.Claim, Call: jobs.Call{WorkerID: "w1", Job: job}, Lease: time.Minute})
	require.NoError(t, err)
	claim := out.(jobs.ScoreBatchClaim)
	require.Len(t, claim.Runs, commands.MaxBatchTraces)
	report := func(run jobs.ScoreBatchRun) {
		raw, err := blobs.Get(ctx, run.ItemsKey)
		require.NoError(t, err)
		var items jobs.ScoringItems
		require.NoError(t, json.Unmarshal(raw, &items))
		score := 0.5
		var actions []jobs.ActionScore
		for _, it := range items.ActionScoreItems {
			actions = append(actions, jobs.ActionScore{TraceID: run.TraceID, StepID: it.StepID, Score: 0.5, Credit: 0.1})
		}
		body, err := json.Marshal(jobs.ScoreBatchReport{TraceID: run.TraceID, RunID: run.RunID,
			ScoringFinished: jobs.ScoringFinished{TraceScore: &score, ActionScores: actions}})
		require.NoError(t, err)
		_, err = cmds.Job.Handle(ctx, commands.Job{Kind: jobs.KindScoreBatch, ID: b.BatchID, Action: jobs.Report, Call: jobs.Call{WorkerID: "w1", Job: job, Body: body}, Lease: time.Minute})
		require.NoError(t, err)
	}
	for _, run := range claim.Runs[:len(claim.Runs)-1] {
		report(run)
	}
	// Every report so far has reached the read model and the scheduler.
	require.Eventually(t, func() bool {
		n, err := q.BackgroundScoringOf(ctx, f.userID, f.modelID)
		return err == nil && n.Scored == len(claim.Runs)-1
	}, 30*time.Second, 20*time.Millisecond)
	time.Sleep(200 * time.Millisecond)
	require.Len(t, batches(), 2, "a batch with a trace still running holds its slot")

	report(claim.Runs[len(claim.Runs)-1])
	require.Eventually(t, func() bool { return len(batches()) == 3 }, 30*time.Second, 20*time.Millisecond,
		"the batch's end refills its slot without waiting for the hourly tick")
	stop()
	require.NoError(t, <-scheduled)
	require.NoError(t, <-pumped)
}

// TestANewTraceIsLookedAtOnceItsDebouncePasses: with an hourly tick and no
// batch ending, a trace imported after the scheduler's first look gets its
// batch once it has been idle for the debounce — the dispatch projection
// times it from the import's event — not at the next tick.
func TestANewTraceIsLookedAtOnceItsDebouncePasses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := readyModel(t, "debounce")
	pool, store, cmds, q, discard, wake, actor := f.pool, f.store, f.cmds, f.q, f.discard, f.wake, f.actor

	pctx, stop := context.WithCancel(ctx)
	defer stop()
	pumped := f.pump(pctx)
	waiter := readmodel.NewWaiter(pool, 30*time.Second)
	go waiter.Listen(pctx)
	const debounce = time.Second
	require.Eventually(t, func() bool { // the rated traces are idle for the debounce
		ids, _, err := q.BackgroundCandidates(ctx, f.userID, f.modelID, time.Now().Add(-debounce-100*time.Millisecond), readmodel.BackgroundCursor{}, nil, 100)
		return err == nil && len(ids) == len(f.ratedIDs)
	}, 30*time.Second, 20*time.Millisecond)
	scheduled := make(chan error, 1)
	go func() {
		scheduled <- dispatch.RunBackgroundScoring(pctx, q, cmds, wake, waiter, time.Hour, debounce, discard)
	}()
	batches := func() [][]string {
		evs, err := store.ReadAfter(ctx, 0, 100000)
		require.NoError(t, err)
		var out [][]string
		for _, e := range evs {
			if e.Type == events.ScoringBatchRequested {
				var p events.ScoringBatchRequestedV1
				require.NoError(t, e.Decode(&p))
				var ids []string
				for _, r := range p.Runs {
					ids = append(ids, r.TraceID)
				}
				out = append(out, ids)
			}
		}
		return out
	}
	require.Eventually(t, func() bool { return len(batches()) == 1 }, 30*time.Second, 20*time.Millisecond, "the first look takes the rated traces")
	require.ElementsMatch(t, f.ratedIDs, batches()[0])

	late, err := cmds.ImportTraces.Handle(ctx, commands.ImportTraces{Actor: actor, Input: commands.ImportTracesInput{Format: "stash", Data: []byte(
		`{"id":"late","steps":[{"role":"user","content":"q3"},{"role":"assistant","content":"answer"}]}`)}})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(batches()) == 2 }, 30*time.Second, 20*time.Millisecond,
		"the new trace's batch comes once its debounce has passed, not at the hourly tick")
	require.Equal(t, late.TraceIDs, batches()[1])
	stop()
	require.NoError(t, <-scheduled)
	require.NoError(t, <-pumped)
}

// bgFixture is a dispatcher with background scoring over a fresh database,
// and an account with one trained model ready to score new traces.
type bgFixture struct {
	pool    *pgxpool.Pool
	blobs   *blob.Local
	store   *eventstore.Store
	cmds    *commands.Commands
	q       *readmodel.Queries
	discard *slog.Logger
	proj    *readmodel.Projection
	rec     *recorder
	wake    *dispatch.BackgroundWake
	d       *dispatch.Dispatcher
	userID  string
	actor   commands.Actor
	modelID string
	// ratedIDs are the three rated traces the model was trained on.
	ratedIDs []string
}

func readyModel(t *testing.T, account string) bgFixture {
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	blobs, err := blob.NewLocal(t.TempDir())
	require.NoError(t, err)
	store := eventstore.New(pool, blobs)
	cmds := commands.New(store)
	q := readmodel.NewQueries(pool)
	discard := slog.New(slog.NewTextHandler(io.Discard, nil))
	proj := readmodel.New(pool, blobs, discard)
	rec := &recorder{msgs: map[string][]*message.Message{}}
	wake := dispatch.NewBackgroundWake()
	d := dispatch.New(cmds, store, rec, discard).WithBackgroundWake(wake)

	u, err := cmds.CreateUser.Handle(ctx, commands.CreateUser{Name: account})
	require.NoError(t, err)
	actor := commands.Actor{UserID: u.UserID}
	ratedIDs := commandstest.RatedTraces(t, cmds, actor)
	req, err := cmds.RequestTraining.Handle(ctx, commands.RequestTraining{Actor: actor, Input: commands.RequestTrainingInput{Name: "m", TraceIDs: ratedIDs}})
	require.NoError(t, err)
	_, err = cmds.BuildDataset.Handle(ctx, commands.BuildDataset{ModelID: req.ModelID})
	require.NoError(t, err)
	_, err = cmds.ClaimTraining.Handle(ctx, commands.ClaimTraining{WorkerID: "trainer", ModelID: req.ModelID, Attempt: 1, Lease: time.Minute})
	require.NoError(t, err)
	require.NoError(t, blobs.Put(ctx, jobs.ArtifactKey(u.UserID, req.ModelID), []byte("checkpoint")))
	_, err = cmds.CompleteTraining.Handle(ctx, commands.CompleteTraining{WorkerID: "trainer", ModelID: req.ModelID, Attempt: 1,
		Metrics: json.RawMessage(`{"action_scoring_version":1}`), RewardStats: json.RawMessage(`{"mean":0,"std":1}`),
		ActionStats: json.RawMessage(`{"mean":0,"std":1}`)})
	require.NoError(t, err)
	return bgFixture{pool: pool, blobs: blobs, store: store, cmds: cmds, q: q, discard: discard, proj: proj, rec: rec, wake: wake, d: d,
		userID: u.UserID, actor: actor, modelID: req.ModelID, ratedIDs: ratedIDs}
}

// pump plays the bus's part until ctx ends: every new event of the log to
// the read model, then to the dispatch projection, in order. The channel
// gets the first error, or nil once ctx ended.
func (f bgFixture) pump(ctx context.Context) <-chan error {
	pumped := make(chan error, 1)
	go func() {
		var after int64
		for ctx.Err() == nil {
			evs, err := f.store.ReadAfter(ctx, after, 1000)
			if err == nil && len(evs) > 0 {
				if err = f.proj.Apply(ctx, evs); err == nil {
					err = f.d.Apply(ctx, evs)
				}
				after = evs[len(evs)-1].Seq
			}
			if err != nil && ctx.Err() == nil {
				pumped <- err
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		pumped <- nil
	}()
	return pumped
}

// BackgroundCandidates walks from a cursor: it nominates only traces at or
// after it, and names the first trace still to score there — a trace whose
// run is queued counts (it can fail and be tried again) but is not
// nominated — so a look that starts there misses nothing.
func TestCandidatesWalkFromTheFirstTraceStillToScore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := readyModel(t, "cursor")
	pctx, stop := context.WithCancel(ctx)
	defer stop()
	pumped := f.pump(pctx)
	look := func(from readmodel.BackgroundCursor) ([]string, *readmodel.BackgroundCursor) {
		ids, unsettled, err := f.q.BackgroundCandidates(ctx, f.userID, f.modelID, time.Now().Add(time.Hour), from, nil, 100)
		require.NoError(t, err)
		return ids, unsettled
	}
	var all []string
	require.Eventually(t, func() bool { all, _ = look(readmodel.BackgroundCursor{}); return len(all) == len(f.ratedIDs) },
		30*time.Second, 20*time.Millisecond)
	require.GreaterOrEqual(t, len(all), 3)
	_, first := look(readmodel.BackgroundCursor{})
	require.NotNil(t, first)
	require.Equal(t, all[0], first.TraceID, "the first candidate is the first trace still to score")

	// From the third candidate on, only it and those after it.
	third := readmodel.BackgroundCursor{TraceID: all[2]}
	require.NoError(t, f.pool.QueryRow(ctx, `SELECT updated_at FROM rm_traces WHERE id = $1`, all[2]).Scan(&third.UpdatedAt))
	ids, u := look(third)
	require.Equal(t, all[2:], ids)
	require.Equal(t, third, *u)

	// The first trace's run is queued: no longer nominated, still the
	// first trace to score.
	_, err := f.cmds.RequestBackgroundBatch.Handle(ctx, commands.RequestBackgroundBatch{ModelID: f.modelID, TraceIDs: all[:1]})
	require.NoError(t, err)
	require.Eventually(t, func() bool { ids, _ := look(readmodel.BackgroundCursor{}); return len(ids) == len(all)-1 },
		30*time.Second, 20*time.Millisecond)
	ids, u = look(readmodel.BackgroundCursor{})
	require.Equal(t, all[1:], ids)
	require.Equal(t, all[0], u.TraceID)
	stop()
	require.NoError(t, <-pumped)
}
