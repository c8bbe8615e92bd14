package readmodel_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/commands/commandstest"
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/projections/readmodel"
)

// TestClaimableTrainingFollowsClaimsAndHandBacks: the queue a free worker
// pulls from lists built, queued models oldest first; a claim takes the
// head (showing the worker and compute "worker" on the model), a hand-back
// puts it back at the head with no worker, and the write path's in-memory
// view (ModelAsOf) agrees with the table at every step.
func TestClaimableTrainingFollowsClaimsAndHandBacks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, blobs, store, cmds := newLog(t)
	q := readmodel.NewQueries(pool)
	proj := readmodel.New(pool, blobs, slog.New(slog.NewTextHandler(io.Discard, nil)))
	var applied int64
	catchUp := func() {
		evs, err := store.ReadAfter(ctx, applied, 10000)
		require.NoError(t, err)
		require.NoError(t, proj.Apply(ctx, evs))
		if len(evs) > 0 {
			applied = evs[len(evs)-1].Seq
		}
	}

	u, err := cmds.CreateUser.Handle(ctx, commands.CreateUser{Name: "queue"})
	require.NoError(t, err)
	actor := commands.Actor{UserID: u.UserID}
	impIDs := commandstest.RatedTraces(t, cmds, actor)
	var ids []string
	for range 2 {
		req, err := cmds.RequestTraining.Handle(ctx, commands.RequestTraining{Actor: actor, Input: commands.RequestTrainingInput{Name: "m", TraceIDs: impIDs}})
		require.NoError(t, err)
		ids = append(ids, req.ModelID)
	}
	unbuilt, err := cmds.RequestTraining.Handle(ctx, commands.RequestTraining{Actor: actor, Input: commands.RequestTrainingInput{Name: "later", TraceIDs: impIDs}})
	require.NoError(t, err)
	for _, id := range ids {
		_, err = cmds.BuildDataset.Handle(ctx, commands.BuildDataset{ModelID: id})
		require.NoError(t, err)
	}
	catchUp()
	queue := func() []string {
		c, err := q.ClaimableTraining(ctx, 10)
		require.NoError(t, err)
		out := []string{}
		for _, x := range c {
			require.Equal(t, 1, x.Attempt)
			out = append(out, x.ModelID)
		}
		return out
	}
	require.Equal(t, ids, queue(), "built models, oldest first; one without a dataset is not claimable")
	require.NotContains(t, queue(), unbuilt.ModelID)

	// Both models agree between the table and the write path's view.
	agree := func(id string) *readmodel.RewardModelDetail {
		d, err := q.GetRewardModel(ctx, u.UserID, id)
		require.NoError(t, err)
		evs, err := cmds.Streams.ModelEvents(ctx, u.UserID, id)
		require.NoError(t, err)
		view, ok := readmodel.ModelAsOf(evs, "")
		require.True(t, ok)
		require.Equal(t, d.Status, view.Status)
		require.Equal(t, d.Compute, view.Compute)
		require.Equal(t, d.WorkerID, view.WorkerID)
		return d
	}

	cands, err := q.ClaimableTraining(ctx, 10)
	require.NoError(t, err)
	job, ok, err := cmds.ClaimNextTraining.Handle(ctx, commands.ClaimNextTraining{WorkerID: "gpu-1", Compute: rewardmodels.ComputeWorker, Candidates: cands, Lease: time.Minute})
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, ids[0], job.ModelID)
	// A second worker given the same (stale) list skips the taken head.
	job2, ok, err := cmds.ClaimNextTraining.Handle(ctx, commands.ClaimNextTraining{WorkerID: "gpu-2", Compute: rewardmodels.ComputeWorker, Candidates: cands, Lease: time.Minute})
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, ids[1], job2.ModelID)
	_, ok, err = cmds.ClaimNextTraining.Handle(ctx, commands.ClaimNextTraining{WorkerID: "gpu-3", Compute: rewardmodels.ComputeWorker, Candidates: cands, Lease: time.Minute})
	require.NoError(t, err)
	require.False(t, ok, "nothing left to claim")
	catchUp()
	require.Empty(t, queue())
	d := agree(ids[0])
	require.Equal(t, rewardmodels.StatusRunning, d.Status)
	require.Equal(t, "worker", d.Compute)
	require.NotNil(t, d.WorkerID)
	require.Equal(t, "gpu-1", *d.WorkerID)

	_, err = cmds.HandBackTraining.Handle(ctx, commands.HandBackTraining{WorkerID: "gpu-2", ModelID: ids[0], Attempt: 1, Reason: "not mine"})
	require.Error(t, err, "only the holder hands back")
	_, err = cmds.HandBackTraining.Handle(ctx, commands.HandBackTraining{WorkerID: "gpu-1", ModelID: ids[0], Attempt: 1, Reason: "worker gpu-1 stopped (shutting down) during training"})
	require.NoError(t, err)
	catchUp()
	require.Equal(t, []string{ids[0]}, queue())
	d = agree(ids[0])
	require.Equal(t, rewardmodels.StatusQueued, d.Status)
	require.Nil(t, d.WorkerID)
	require.Nil(t, d.StartedAt)

	job, ok, err = cmds.ClaimNextTraining.Handle(ctx, commands.ClaimNextTraining{WorkerID: "local", Compute: rewardmodels.ComputeLocal, Candidates: []rewardmodels.TrainingCandidate{{ModelID: ids[0], Attempt: 1}}, Lease: time.Minute})
	require.NoError(t, err)
	require.True(t, ok)
	catchUp()
	d = agree(job.ModelID)
	require.Equal(t, "local", d.Compute)
	require.Equal(t, "local", *d.WorkerID)
}
