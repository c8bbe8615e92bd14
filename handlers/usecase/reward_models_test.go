package usecase_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/commands/commandstest"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/handlers/usecase"
	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/platform/eventstore"
	"github.com/criticml/critic/platform/pg/pgtest"
	"github.com/criticml/critic/projections/readmodel"
)

// modelFixture is a backend whose read model is applied by hand, so a test
// decides whether it lags behind a write or runs ahead of it.
type modelFixture struct {
	b      usecase.Backend
	pool   *pgxpool.Pool
	store  *eventstore.Store
	proj   *readmodel.Projection
	caller *readmodel.Caller
	ids    []string
}

func newModelFixture(t *testing.T) *modelFixture {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	blobs, err := blob.NewLocal(t.TempDir())
	require.NoError(t, err)
	store := eventstore.New(pool, blobs)
	cmds := commands.New(store)
	f := &modelFixture{pool: pool, store: store, proj: readmodel.New(pool, blobs, slog.New(slog.NewTextHandler(io.Discard, nil)))}
	w := readmodel.NewWaiter(pool, 300*time.Millisecond)
	wctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	go w.Listen(wctx)
	f.b = usecase.Backend{Cmds: cmds, Queries: readmodel.NewQueries(pool), Waiter: w}
	u, err := cmds.CreateUser.Handle(ctx, commands.CreateUser{Name: "rm-answers"})
	require.NoError(t, err)
	actor := commands.Actor{UserID: u.UserID}
	f.caller = &readmodel.Caller{UserID: u.UserID}
	impIDs := commandstest.RatedTraces(t, cmds, actor)
	f.ids = impIDs
	return f
}

// catchUp applies every stored event to the read model.
func (f *modelFixture) catchUp(t *testing.T) {
	t.Helper()
	all, err := f.store.ReadAfter(context.Background(), 0, 100000)
	require.NoError(t, err)
	require.NoError(t, f.proj.Apply(context.Background(), all))
}

func (f *modelFixture) requestedAt(t *testing.T, modelID string) time.Time {
	t.Helper()
	loaded, err := f.store.LoadStreams(context.Background(), []string{events.RewardModelStream(modelID)})
	require.NoError(t, err)
	evs := loaded[events.RewardModelStream(modelID)]
	require.Equal(t, events.RewardModelRequested, evs[0].Type)
	return evs[0].RecordedAt.UTC()
}

// TestCreateAnswersFromTheEventsWhenTheReadModelLags: no projection runs, so
// the wait for the read model times out; the answer is still the stored
// request, with the request event's own time, not the clock's.
func TestCreateAnswersFromTheEventsWhenTheReadModelLags(t *testing.T) {
	t.Parallel()
	f := newModelFixture(t)
	name := "lagging"
	time.Sleep(5 * time.Millisecond)
	m, err := f.b.CreateRewardModel(context.Background(), f.caller, usecase.TrainingRequest{Name: &name, TraceIDs: f.ids})
	require.NoError(t, err)
	require.Equal(t, rewardmodels.StatusQueued, m.Status)
	require.Equal(t, name, m.Name)
	require.Equal(t, 3, m.TraceCount)
	require.Equal(t, f.requestedAt(t, m.ID), m.CreatedAt, "created_at is the request event's time")
	require.Nil(t, m.NumPairs)
	require.JSONEq(t, "null", string(m.Metrics))

	// Once the read model catches up, a GET shows the same model.
	f.catchUp(t)
	got, err := f.b.Queries.GetRewardModel(context.Background(), f.caller.UserID, m.ID)
	require.NoError(t, err)
	require.Equal(t, *m, got.RewardModel)
}

// eventReads records the event-log queries a pool runs once it has
// appended (COPY into events): what a write reads after its own append.
type eventReads struct {
	mu       sync.Mutex
	appended bool
	reads    []string
}

func (r *eventReads) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.appended && strings.Contains(d.SQL, "FROM events") {
		r.reads = append(r.reads, d.SQL)
	}
	return ctx
}

func (r *eventReads) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (r *eventReads) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceCopyFromStartData) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(d.TableName) == 1 && d.TableName[0] == "events" {
		r.appended, r.reads = true, nil
	}
	return ctx
}

func (r *eventReads) TraceCopyFromEnd(context.Context, *pgx.Conn, pgx.TraceCopyFromEndData) {}

// TestWritesAnswerFromTheReadModelTheyWaitedFor: once the read model has
// applied a request or a retry, the answer is its row (what GET shows), and
// the write reads nothing of the event log after its append: no re-fold of
// the model's stream (issue 34, needless hops).
func TestWritesAnswerFromTheReadModelTheyWaitedFor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newModelFixture(t)
	f.catchUp(t)
	cfg, err := pgxpool.ParseConfig(f.pool.Config().ConnString())
	require.NoError(t, err)
	tr := &eventReads{}
	cfg.ConnConfig.Tracer = tr
	traced, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(traced.Close)
	cmds := commands.New(eventstore.New(traced, f.store.Blobs()))
	// The waiter applies the write's events itself (no bus here), so the
	// wait ends with the read model caught up.
	w := readmodel.NewWaiter(f.pool, 10*time.Second).WithCatchUp(f.proj, f.store, 20*time.Millisecond, slog.New(slog.NewTextHandler(io.Discard, nil)))
	wctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	go w.Listen(wctx)
	b := f.b
	b.Cmds, b.Waiter = cmds, w

	name := "answered"
	m, err := b.CreateRewardModel(ctx, f.caller, usecase.TrainingRequest{Name: &name, TraceIDs: f.ids})
	require.NoError(t, err)
	require.Empty(t, tr.reads, "the create answer reads no event after its append")
	require.Equal(t, rewardmodels.StatusQueued, m.Status)
	require.Equal(t, f.requestedAt(t, m.ID), m.CreatedAt)
	got, err := b.Queries.GetRewardModel(ctx, f.caller.UserID, m.ID)
	require.NoError(t, err)
	require.Equal(t, got.RewardModel, *m)

	_, err = cmds.BuildDataset.Handle(ctx, commands.BuildDataset{ModelID: m.ID})
	require.NoError(t, err)
	_, err = cmds.ClaimTraining.Handle(ctx, commands.ClaimTraining{WorkerID: "w1", ModelID: m.ID, Attempt: 1, Lease: time.Minute})
	require.NoError(t, err)
	_, err = cmds.FailTraining.Handle(ctx, commands.FailTraining{WorkerID: "w1", ModelID: m.ID, Attempt: 1, Message: "boom"})
	require.NoError(t, err)
	f.catchUp(t)
	r, err := b.RetryRewardModel(ctx, f.caller, m.ID)
	require.NoError(t, err)
	require.Empty(t, tr.reads, "the retry answer reads no event after its append")
	require.Equal(t, rewardmodels.StatusQueued, r.Status)
	require.Nil(t, r.Error)
	require.Nil(t, r.NumPairs)
	got, err = b.Queries.GetRewardModel(ctx, f.caller.UserID, m.ID)
	require.NoError(t, err)
	require.Equal(t, got.RewardModel, *r)
}

// TestRetryAnswersTheRetriedStateNotALaterOne: a worker that claims the
// retried model before the answer is built does not change the answer into
// a state that never existed, and a lagging read model does not fail it.
func TestRetryAnswersTheRetriedStateNotALaterOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newModelFixture(t)
	cmds := f.b.Cmds
	actor := commands.Actor{UserID: f.caller.UserID}
	req, err := cmds.RequestTraining.Handle(ctx, commands.RequestTraining{Actor: actor, Input: commands.RequestTrainingInput{Name: "m", TraceIDs: f.ids}})
	require.NoError(t, err)
	_, err = cmds.BuildDataset.Handle(ctx, commands.BuildDataset{ModelID: req.ModelID})
	require.NoError(t, err)
	_, err = cmds.ClaimTraining.Handle(ctx, commands.ClaimTraining{WorkerID: "w1", ModelID: req.ModelID, Attempt: 1, Lease: time.Minute})
	require.NoError(t, err)
	_, err = cmds.FailTraining.Handle(ctx, commands.FailTraining{WorkerID: "w1", ModelID: req.ModelID, Attempt: 1, Message: "CUDA out of memory"})
	require.NoError(t, err)
	f.catchUp(t)

	// The read model is not applied after the retry: the wait times out.
	m, err := f.b.RetryRewardModel(ctx, f.caller, req.ModelID)
	require.NoError(t, err, "a stored retry is answered even when the read model lags")
	require.Equal(t, rewardmodels.StatusQueued, m.Status)
	require.Nil(t, m.Error)
	require.Nil(t, m.StartedAt)
	require.Nil(t, m.FinishedAt)
	require.Equal(t, f.requestedAt(t, req.ModelID), m.CreatedAt)

	// Events after the write (a fast worker's dataset and claim) are the
	// next GET's, not this answer's.
	evs, err := cmds.Streams.ModelEvents(ctx, f.caller.UserID, req.ModelID)
	require.NoError(t, err)
	retried := evs[len(evs)-1]
	require.Equal(t, events.RewardModelRetried, retried.Type)
	_, err = cmds.BuildDataset.Handle(ctx, commands.BuildDataset{ModelID: req.ModelID})
	require.NoError(t, err)
	_, err = cmds.ClaimTraining.Handle(ctx, commands.ClaimTraining{WorkerID: "w2", ModelID: req.ModelID, Attempt: 2, Lease: time.Minute})
	require.NoError(t, err)
	evs, err = cmds.Streams.ModelEvents(ctx, f.caller.UserID, req.ModelID)
	require.NoError(t, err)
	asOf, ok := readmodel.ModelAsOf(evs, retried.ID)
	require.True(t, ok)
	require.Equal(t, *m, asOf)
	now, ok := readmodel.ModelAsOf(evs, "")
	require.True(t, ok)
	require.Equal(t, rewardmodels.StatusRunning, now.Status)
	require.NotNil(t, now.StartedAt)
}

// TestModelAsOfMatchesTheReadModel walks a model through every status and
// requires the in-memory fold to equal what the projection stores after
// each write, so the two transition tables cannot drift apart.
func TestModelAsOfMatchesTheReadModel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newModelFixture(t)
	cmds := f.b.Cmds
	actor := commands.Actor{UserID: f.caller.UserID}
	req, err := cmds.RequestTraining.Handle(ctx, commands.RequestTraining{Actor: actor, Input: commands.RequestTrainingInput{Name: "m", TraceIDs: f.ids, MaxPairs: 10}})
	require.NoError(t, err)
	id := req.ModelID
	check := func(step string) {
		t.Helper()
		f.catchUp(t)
		evs, err := cmds.Streams.ModelEvents(ctx, f.caller.UserID, id)
		require.NoError(t, err)
		fold, ok := readmodel.ModelAsOf(evs, "")
		require.True(t, ok)
		got, err := f.b.Queries.GetRewardModel(ctx, f.caller.UserID, id)
		require.NoError(t, err)
		rm := got.RewardModel
		require.JSONEq(t, string(rm.Metrics), string(fold.Metrics), step)
		require.JSONEq(t, string(rm.Progress), string(fold.Progress), step)
		rm.Metrics, rm.Progress, fold.Metrics, fold.Progress = nil, nil, nil, nil
		require.Equal(t, rm, fold, step)
	}
	check("requested")
	_, err = cmds.BuildDataset.Handle(ctx, commands.BuildDataset{ModelID: id})
	require.NoError(t, err)
	check("dataset built")
	_, err = cmds.ClaimTraining.Handle(ctx, commands.ClaimTraining{WorkerID: "w1", ModelID: id, Attempt: 1, Lease: time.Minute})
	require.NoError(t, err)
	check("running")
	_, err = cmds.Heartbeat.Handle(ctx, commands.Heartbeat{WorkerID: "w1", ModelID: id, Attempt: 1, Progress: events.Progress{Phase: "training", Step: 1, TotalSteps: 3, Loss: 0.5}})
	require.NoError(t, err)
	check("heartbeat")
	_, err = cmds.FailTraining.Handle(ctx, commands.FailTraining{WorkerID: "w1", ModelID: id, Attempt: 1, Message: "boom"})
	require.NoError(t, err)
	check("failed")
	_, err = cmds.RetryTraining.Handle(ctx, commands.RetryTraining{Actor: actor, ModelID: id})
	require.NoError(t, err)
	check("retried")
	_, err = cmds.BuildDataset.Handle(ctx, commands.BuildDataset{ModelID: id})
	require.NoError(t, err)
	job, err := cmds.ClaimTraining.Handle(ctx, commands.ClaimTraining{WorkerID: "w2", ModelID: id, Attempt: 2, Lease: time.Minute})
	require.NoError(t, err)
	check("running again")
	require.NoError(t, f.store.Blobs().Put(ctx, job.ArtifactKey, []byte("checkpoint")))
	_, err = cmds.CompleteTraining.Handle(ctx, commands.CompleteTraining{WorkerID: "w2", ModelID: id, Attempt: 2,
		Metrics: json.RawMessage(`{"accuracy": 1, "eval_pairs": 0}`), RewardStats: json.RawMessage(`{"mean": 0.25, "std": 1.5, "count": 4}`)})
	require.NoError(t, err)
	check("succeeded")
}
