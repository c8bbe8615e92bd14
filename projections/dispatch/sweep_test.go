package dispatch_test

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
	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/platform/eventstore"
	"github.com/criticml/critic/platform/pg/pgtest"
	"github.com/criticml/critic/projections/dispatch"
	"github.com/criticml/critic/projections/readmodel"
)

// TestSweepExpiresADeadLeaseOnTheDatabaseClock: a running model whose
// worker stopped heartbeating is requeued by the sweep, which reads the time
// from PostgreSQL (the clock that stamped the heartbeat), and a model whose
// lease is alive is left running.
func TestSweepExpiresADeadLeaseOnTheDatabaseClock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	blobs, err := blob.NewLocal(t.TempDir())
	require.NoError(t, err)
	store := eventstore.New(pool, blobs)
	cmds := commands.New(store)
	q := readmodel.NewQueries(pool)
	proj := readmodel.New(pool, blobs, slog.New(slog.NewTextHandler(io.Discard, nil)))

	u, err := cmds.CreateUser.Handle(ctx, commands.CreateUser{Name: "sweeper"})
	require.NoError(t, err)
	actor := commands.Actor{UserID: u.UserID}
	impIDs := commandstest.RatedTraces(t, cmds, actor)
	running := func(lease time.Duration) string {
		req, err := cmds.RequestTraining.Handle(ctx, commands.RequestTraining{Actor: actor, Input: commands.RequestTrainingInput{Name: "m", TraceIDs: impIDs}})
		require.NoError(t, err)
		_, err = cmds.BuildDataset.Handle(ctx, commands.BuildDataset{ModelID: req.ModelID})
		require.NoError(t, err)
		_, err = cmds.ClaimTraining.Handle(ctx, commands.ClaimTraining{WorkerID: "w", ModelID: req.ModelID, Attempt: 1, Lease: lease})
		require.NoError(t, err)
		return req.ModelID
	}
	dead, alive := running(time.Second), running(time.Hour)
	all, err := store.ReadAfter(ctx, 0, 10000)
	require.NoError(t, err)
	require.NoError(t, proj.Apply(ctx, all))

	dbNow, err := q.DBNow(ctx)
	require.NoError(t, err)
	require.WithinDuration(t, time.Now(), dbNow, time.Minute, "DBNow reads the server's clock")

	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- dispatch.SweepLeases(sctx, q, cmds, 50*time.Millisecond, time.Second, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		m, err := cmds.Streams.Model(ctx, dead)
		require.NoError(t, err)
		if m.Status == rewardmodels.StatusQueued {
			require.Len(t, m.Lost, 1, "the lost run is requeued, not failed")
			break
		}
		require.True(t, time.Now().Before(deadline), "the dead lease was never expired")
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	require.NoError(t, <-done)
	m, err := cmds.Streams.Model(ctx, alive)
	require.NoError(t, err)
	require.Equal(t, rewardmodels.StatusRunning, m.Status, "a live lease is left alone")
}
