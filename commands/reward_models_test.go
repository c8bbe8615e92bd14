package commands_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/commands/commandstest"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/platform/eventstore"
	"github.com/criticml/critic/platform/pg/pgtest"
)

func setup(t *testing.T) (*commands.Commands, *eventstore.Store, commands.Actor) {
	t.Helper()
	blobs, err := blob.NewLocal(t.TempDir())
	require.NoError(t, err)
	store := eventstore.New(pgtest.NewPool(t), blobs)
	cmds := commands.New(store)
	u, err := cmds.CreateUser.Handle(context.Background(), commands.CreateUser{Name: "u" + time.Now().Format("150405.000000")})
	require.NoError(t, err)
	return cmds, store, commands.Actor{UserID: u.UserID}
}

func TestClaimIsExclusiveAndLeasesExpire(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cmds, _, actor := setup(t)
	ids := commandstest.RatedTraces(t, cmds, actor)
	req, err := cmds.RequestTraining.Handle(ctx, commands.RequestTraining{Actor: actor, Input: commands.RequestTrainingInput{Name: "m", TraceIDs: ids}})
	require.NoError(t, err)

	// Not claimable before its dataset exists.
	_, err = cmds.ClaimTraining.Handle(ctx, commands.ClaimTraining{WorkerID: "w1", ModelID: req.ModelID, Attempt: 1, Lease: time.Minute})
	var conflict *domain.ConflictError
	require.ErrorAs(t, err, &conflict)

	_, err = cmds.BuildDataset.Handle(ctx, commands.BuildDataset{ModelID: req.ModelID})
	require.NoError(t, err)
	again, err := cmds.BuildDataset.Handle(ctx, commands.BuildDataset{ModelID: req.ModelID}) // a duplicate delivery
	require.NoError(t, err)
	require.Empty(t, again.LastEventID, "the dataset is built once")
	m, err := cmds.Streams.Model(ctx, req.ModelID)
	require.NoError(t, err)
	require.Equal(t, 2, m.Dataset.NumPairs, "a×b and c×b")
	require.Equal(t, 3, m.Dataset.SourceTraces)

	job, err := cmds.ClaimTraining.Handle(ctx, commands.ClaimTraining{WorkerID: "w1", ModelID: req.ModelID, Attempt: 1, Lease: 2 * time.Second})
	require.NoError(t, err)
	require.Equal(t, jobs.ArtifactKey(actor.UserID, req.ModelID), job.ArtifactKey)
	// A duplicate delivery, to the same or another worker, cannot start it twice.
	for _, w := range []string{"w1", "w2"} {
		_, err = cmds.ClaimTraining.Handle(ctx, commands.ClaimTraining{WorkerID: w, ModelID: req.ModelID, Attempt: 1, Lease: time.Minute})
		require.ErrorAs(t, err, &conflict)
	}
	// Only the holder heartbeats.
	_, err = cmds.Heartbeat.Handle(ctx, commands.Heartbeat{WorkerID: "w2", ModelID: req.ModelID, Attempt: 1, Progress: events.Progress{Phase: "training"}})
	require.ErrorAs(t, err, &conflict)
	_, err = cmds.Heartbeat.Handle(ctx, commands.Heartbeat{WorkerID: "w1", ModelID: req.ModelID, Attempt: 1, Progress: events.Progress{Phase: "training", Step: 1, TotalSteps: 2}})
	require.NoError(t, err)

	// A live lease is left alone; an expired one requeues the attempt for
	// another worker, twice; the third lost run fails the model.
	r, err := cmds.ExpireLease.Handle(ctx, commands.ExpireLease{ModelID: req.ModelID, Now: time.Now()})
	require.NoError(t, err)
	require.Empty(t, r.LastEventID)
	for run, w := range []string{"w2", "w3"} {
		_, err = cmds.ExpireLease.Handle(ctx, commands.ExpireLease{ModelID: req.ModelID, Now: time.Now().Add(time.Duration(run+1) * time.Minute)})
		require.NoError(t, err)
		m, err = cmds.Streams.Model(ctx, req.ModelID)
		require.NoError(t, err)
		require.Equal(t, rewardmodels.StatusQueued, m.Status, "lost run %d is requeued", run+1)
		require.Equal(t, 1, m.Attempt)
		_, err = cmds.Heartbeat.Handle(ctx, commands.Heartbeat{WorkerID: "w1", ModelID: req.ModelID, Attempt: 1, Progress: events.Progress{}})
		require.ErrorAs(t, err, &conflict, "the lost worker's heartbeat is refused")
		_, err = cmds.ClaimTraining.Handle(ctx, commands.ClaimTraining{WorkerID: w, ModelID: req.ModelID, Attempt: 1, Lease: 2 * time.Second})
		require.NoError(t, err, "another worker claims the requeued attempt")
	}
	_, err = cmds.ExpireLease.Handle(ctx, commands.ExpireLease{ModelID: req.ModelID, Now: time.Now().Add(time.Hour)})
	require.NoError(t, err)
	m, err = cmds.Streams.Model(ctx, req.ModelID)
	require.NoError(t, err)
	require.Equal(t, rewardmodels.StatusFailed, m.Status)
	require.True(t, strings.HasPrefix(m.Error, "training failed: the worker was lost 3 times"), m.Error)
	require.Contains(t, m.Error, "\nrun 3: worker w3 sent no heartbeat")
	// The workers that lost their lease can no longer report.
	_, err = cmds.FailTraining.Handle(ctx, commands.FailTraining{WorkerID: "w1", ModelID: req.ModelID, Attempt: 1, Message: "late"})
	require.ErrorAs(t, err, &conflict)
	_, err = cmds.FailTraining.Handle(ctx, commands.FailTraining{WorkerID: "w3", ModelID: req.ModelID, Attempt: 1, Message: "late"})
	require.ErrorAs(t, err, &conflict)

	// Retry: same id, attempt 2, queued again.
	_, err = cmds.RetryTraining.Handle(ctx, commands.RetryTraining{Actor: actor, ModelID: req.ModelID})
	require.NoError(t, err)
	_, err = cmds.RetryTraining.Handle(ctx, commands.RetryTraining{Actor: actor, ModelID: req.ModelID})
	require.ErrorAs(t, err, &conflict, "only failed models retry")
	m, err = cmds.Streams.Model(ctx, req.ModelID)
	require.NoError(t, err)
	require.Equal(t, 2, m.Attempt)
	require.Equal(t, rewardmodels.StatusQueued, m.Status)
}

func TestTooFewPairsFailsBeforeTraining(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cmds, _, actor := setup(t)
	ids := commandstest.RatedTraces(t, cmds, actor)
	req, err := cmds.RequestTraining.Handle(ctx, commands.RequestTraining{Actor: actor, Input: commands.RequestTrainingInput{Name: "m", TraceIDs: ids[:1]}})
	require.NoError(t, err)
	_, err = cmds.BuildDataset.Handle(ctx, commands.BuildDataset{ModelID: req.ModelID})
	require.NoError(t, err)
	m, err := cmds.Streams.Model(ctx, req.ModelID)
	require.NoError(t, err)
	require.Equal(t, rewardmodels.StatusFailed, m.Status)
	require.Nil(t, m.Dataset)
}

func TestRequestTrainingNamesTheFirstForeignTrace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cmds, _, actor := setup(t)
	ids := commandstest.RatedTraces(t, cmds, actor)
	_, err := cmds.RequestTraining.Handle(ctx, commands.RequestTraining{Actor: actor, Input: commands.RequestTrainingInput{Name: "m", TraceIDs: []string{ids[0], "not-mine", "also-not"}}})
	var nf *domain.NotFoundError
	require.True(t, errors.As(err, &nf))
	require.Equal(t, "not-mine", nf.ID)
}

func TestStuckScoringRunsExpire(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cmds, store, actor := setup(t)
	stream := events.ScoringStream("t1", "m1")
	_, err := store.Append(ctx, eventstore.Meta{Actor: "system"}, map[string]int64{stream: 0}, []events.New{
		{ID: "00000000-0000-0000-0000-0000000000a1", Stream: stream, OwnerID: actor.UserID, Type: events.ScoringRunRequested,
			Payload: events.ScoringRunRequestedV1{RunID: "r1", TraceID: "t1", ModelID: "m1", TraceRevision: 1}},
		{ID: "00000000-0000-0000-0000-0000000000a2", Stream: stream, OwnerID: actor.UserID, Type: events.ScoringRunStarted,
			Payload: events.ScoringRunStartedV1{RunID: "r1", TraceID: "t1", ModelID: "m1", WorkerID: "w"}},
	})
	require.NoError(t, err)
	started := time.Now()
	r, err := cmds.ExpireScoringRun.Handle(ctx, commands.ExpireScoringRun{TraceID: "t1", ModelID: "m1", RunID: "r1", StartedAt: started, Now: started.Add(time.Minute), Timeout: 10 * time.Minute})
	require.NoError(t, err)
	require.Empty(t, r.LastEventID, "still within its time")
	// Lost twice: back to the queue each time, for another worker.
	workers := []string{"w", "w2", "w3"}
	for i, w := range workers {
		if i > 0 {
			_, err := cmds.ClaimScoring.Handle(ctx, commands.ClaimScoring{WorkerID: w, TraceID: "t1", ModelID: "m1", RunID: "r1"})
			require.NoError(t, err, "the requeued run is claimable again")
		}
		r, err = cmds.ExpireScoringRun.Handle(ctx, commands.ExpireScoringRun{TraceID: "t1", ModelID: "m1", RunID: "r1", StartedAt: started, Now: started.Add(11 * time.Minute), Timeout: 10 * time.Minute})
		require.NoError(t, err)
		require.NotEmpty(t, r.LastEventID)
		// The lost worker can no longer report it.
		_, err = cmds.FinishScoring.Handle(ctx, commands.FinishScoring{WorkerID: w, TraceID: "t1", ModelID: "m1", RunID: "r1"})
		var conflict *domain.ConflictError
		require.ErrorAs(t, err, &conflict)
		loaded, err := store.LoadStreams(ctx, []string{stream})
		require.NoError(t, err)
		last := loaded[stream][len(loaded[stream])-1]
		if i < len(workers)-1 {
			require.Equal(t, events.ScoringRunRequeued, last.Type)
			var p events.ScoringRunRequeuedV1
			require.NoError(t, last.Decode(&p))
			require.Equal(t, events.RequeueLeaseExpired, p.Reason)
			require.Equal(t, w, p.WorkerID)
			continue
		}
		require.Equal(t, events.ScoringRunFailed, last.Type)
		var p events.ScoringRunFailedV1
		require.NoError(t, last.Decode(&p))
		lines := strings.Split(p.Error, "\n")
		require.Equal(t, "scoring failed: the worker was lost 3 times (no result within 10m0s each time); request scoring again once the workers are healthy", lines[0])
		require.Len(t, lines, 4)
		for j, l := range lines[1:] {
			require.True(t, strings.HasPrefix(l, fmt.Sprintf("run %d: worker %s did not finish within 10m0s", j+1, workers[j])), l)
		}
	}
}

// base_model is a hub id or a directory under the deployment's model roots:
// /etc and another owner's checkpoint cache are 422s naming base_model and
// no server path, and nothing is recorded.
func TestRequestTrainingConfinesLocalBaseModels(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	blobs, err := blob.NewLocal(t.TempDir())
	require.NoError(t, err)
	store := eventstore.New(pgtest.NewPool(t), blobs)
	data := t.TempDir()
	cmds := commands.New(store, commands.WithModelRoots(data+"/models"))
	u, err := cmds.CreateUser.Handle(ctx, commands.CreateUser{Name: "roots"})
	require.NoError(t, err)
	actor := commands.Actor{UserID: u.UserID}
	ids := commandstest.RatedTraces(t, cmds, actor)
	for _, bad := range []string{"/etc", data + "/worker/checkpoints/0a1b2c/model", data + "/models/../worker/checkpoints/0a1b2c", "../../etc", "gpt2"} {
		_, err := cmds.RequestTraining.Handle(ctx, commands.RequestTraining{Actor: actor, Input: commands.RequestTrainingInput{Name: "m", TraceIDs: ids, BaseModel: bad}})
		var ve *domain.ValidationError
		require.ErrorAs(t, err, &ve, bad)
		require.Equal(t, "base_model", ve.Field)
		require.NotContains(t, ve.Message, data)
		require.NotContains(t, ve.Message, "/etc")
	}
	_, err = cmds.RequestTraining.Handle(ctx, commands.RequestTraining{Actor: actor, Input: commands.RequestTrainingInput{Name: "m", TraceIDs: ids, BaseModel: data + "/models/demo"}})
	require.NoError(t, err)
	_, err = cmds.RequestTraining.Handle(ctx, commands.RequestTraining{Actor: actor, Input: commands.RequestTrainingInput{Name: "m", TraceIDs: ids, BaseModel: "Qwen/Qwen3-0.6B"}})
	require.NoError(t, err)
}
