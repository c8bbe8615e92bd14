package dispatch_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/platform/eventstore"
	"github.com/criticml/critic/platform/pg/pgtest"
	"github.com/criticml/critic/projections/dispatch"
	"github.com/criticml/critic/projections/readmodel"
)

// recorder keeps what the dispatcher published.
type recorder struct {
	mu   sync.Mutex
	msgs map[string][]*message.Message
}

func (r *recorder) Publish(topic string, msgs ...*message.Message) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs[topic] = append(r.msgs[topic], msgs...)
	return nil
}

// TestSweepRequeuesAnExpiredExtractionAndPublishesItAgain: an extraction
// whose worker died (its lease ran out) is requeued by the lease sweep
// (reward_model.extraction_requeued.v1), the dispatcher publishes its job
// again, and another worker's claim then succeeds; an extraction whose
// lease is alive stays with its worker, whose claim by anyone else is
// refused as held.
func TestSweepRequeuesAnExpiredExtractionAndPublishesItAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	blobs, err := blob.NewLocal(t.TempDir())
	require.NoError(t, err)
	store := eventstore.New(pool, blobs)
	cmds := commands.New(store, commands.WithFeedbackModel("openai/test", ""))
	q := readmodel.NewQueries(pool)
	discard := slog.New(slog.NewTextHandler(io.Discard, nil))
	proj := readmodel.New(pool, blobs, discard)

	u, err := cmds.CreateUser.Handle(ctx, commands.CreateUser{Name: "extract-sweeper"})
	require.NoError(t, err)
	actor := commands.Actor{UserID: u.UserID}
	imp, err := cmds.ImportTraces.Handle(ctx, commands.ImportTraces{Actor: actor, Input: commands.ImportTracesInput{Format: "stash", Data: []byte(
		`{"id":"x","steps":[{"role":"user","content":"Sort 3,1,2"},{"role":"assistant","content":"3,2,1"},{"role":"user","content":"No, that's the wrong order."}]}` + "\n" +
			`{"id":"y","steps":[{"role":"user","content":"Sort b,a"},{"role":"assistant","content":"a,b"},{"role":"user","content":"Thanks, perfect."}]}`)}})
	require.NoError(t, err)
	extracting := func(worker string, lease time.Duration) string {
		req, err := cmds.RequestTraining.Handle(ctx, commands.RequestTraining{Actor: actor, Input: commands.RequestTrainingInput{Name: "m", TraceIDs: imp.TraceIDs}})
		require.NoError(t, err)
		_, err = cmds.ClaimExtraction.Handle(ctx, commands.ClaimExtraction{WorkerID: worker, ModelID: req.ModelID, Attempt: 1, Lease: lease})
		require.NoError(t, err)
		return req.ModelID
	}
	dead, alive := extracting("w-dead", time.Second), extracting("w-alive", time.Hour)
	all, err := store.ReadAfter(ctx, 0, 10000)
	require.NoError(t, err)
	require.NoError(t, proj.Apply(ctx, all))
	after := all[len(all)-1].Seq

	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- dispatch.SweepLeases(sctx, q, cmds, 50*time.Millisecond, time.Second, discard) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		m, err := cmds.Streams.Model(ctx, dead)
		require.NoError(t, err)
		if m.Extraction == nil {
			require.Equal(t, rewardmodels.StatusQueued, m.Status, "a requeued extraction leaves the model queued")
			break
		}
		require.True(t, time.Now().Before(deadline), "the dead extraction lease was never expired")
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	require.NoError(t, <-done)

	m, err := cmds.Streams.Model(ctx, alive)
	require.NoError(t, err)
	require.NotNil(t, m.Extraction, "a live extraction lease is left alone")
	require.Equal(t, "w-alive", m.Extraction.WorkerID)
	_, err = cmds.ClaimExtraction.Handle(ctx, commands.ClaimExtraction{WorkerID: "w-other", ModelID: alive, Attempt: 1, Lease: time.Minute})
	var ce *domain.ConflictError
	require.True(t, errors.As(err, &ce), "claim of a held extraction: %v", err)
	require.Equal(t, rewardmodels.ExtractionHeld, ce.Code)

	// The requeue event, once dispatched, publishes the job again.
	later, err := store.ReadAfter(ctx, after, 10000)
	require.NoError(t, err)
	var requeued []events.Envelope
	for _, e := range later {
		if e.Type == events.RewardModelExtractionRequeued {
			requeued = append(requeued, e)
		}
	}
	require.Len(t, requeued, 1, "exactly the dead extraction is requeued, once")
	var p events.RewardModelExtractionRequeuedV1
	require.NoError(t, json.Unmarshal(requeued[0].Payload, &p))
	require.Contains(t, p.Detail, "worker w-dead sent no feedback-extraction heartbeat")
	require.Equal(t, events.RewardModelExtractionRequeuedV1{ModelID: dead, Attempt: 1, WorkerID: "w-dead", Reason: events.RequeueLeaseExpired, Detail: p.Detail}, p)
	require.NoError(t, proj.Apply(ctx, later))
	rec := &recorder{msgs: map[string][]*message.Message{}}
	require.NoError(t, dispatch.New(cmds, store, rec, discard).Apply(ctx, requeued))
	require.Len(t, rec.msgs[jobs.TopicExtract], 1)
	var job jobs.ExtractJob
	require.NoError(t, json.Unmarshal(rec.msgs[jobs.TopicExtract][0].Payload, &job))
	require.Equal(t, jobs.ExtractJob{ModelID: dead, Attempt: 1, OwnerID: u.UserID}, job)

	// Nobody holds it, so the sweep no longer nominates it, and the next
	// free worker takes it at once.
	ids, err := q.ExtractingModels(ctx)
	require.NoError(t, err)
	require.NotContains(t, ids, dead)
	_, err = cmds.ClaimExtraction.Handle(ctx, commands.ClaimExtraction{WorkerID: "w-next", ModelID: dead, Attempt: 1, Lease: time.Minute})
	require.NoError(t, err)
}
