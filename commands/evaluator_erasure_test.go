package commands_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/platform/eventstore"
	"github.com/criticml/critic/platform/keyring"
	"github.com/criticml/critic/platform/pg/pgtest"
)

// TestErasedTraceLeavesTheBenchmark (issue 37): a frozen benchmark version
// stores its items' ids, never a contributed trace's text, so deleting a
// benchmark trace leaves its words nowhere in the log; the version still
// verifies, and a candidate requested after the erasure is built and judged
// without the erased trace's items while every other item keeps its text.
func TestErasedTraceLeavesTheBenchmark(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	blobs, err := blob.NewLocal(t.TempDir())
	require.NoError(t, err)
	pool := pgtest.NewPool(t)
	master := make([]byte, keyring.KeySize)
	_, _ = rand.Read(master)
	ring, err := keyring.New(pool, master)
	require.NoError(t, err)
	store := eventstore.New(pool, blobs, eventstore.WithKeyring(ring))
	cmds := commands.New(store, commands.WithFeedbackModel("openai/test", ""))
	u, err := cmds.CreateUser.Handle(ctx, commands.CreateUser{Name: "eraser" + time.Now().Format("150405.000000")})
	require.NoError(t, err)
	alice := commands.Actor{UserID: u.UserID}

	ids := reviewedAccount(t, cmds, store, alice, "e", 30)
	for _, id := range ids {
		_, err := cmds.SetContribution.Handle(ctx, commands.SetContribution{Actor: alice, TraceID: id, Contribute: true})
		require.NoError(t, err)
	}
	v1, err := cmds.FreezeBenchmark.Handle(ctx, commands.FreezeBenchmark{Operator: "op"})
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(v1.Benchmark.Items), 2)
	gone := v1.Benchmark.Items[0]
	require.NotEmpty(t, gone.Chosen, "the freeze answers with the items' text")

	dumpHas := func(text string) int {
		var n int
		require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM events WHERE strpos(payload::text, $1) > 0", text).Scan(&n))
		return n
	}
	var stored events.EvaluatorBenchmarkFrozenV1
	require.NoError(t, pool.QueryRow(ctx, "SELECT payload FROM events WHERE type = $1", events.EvaluatorBenchmarkFrozen).Scan(&stored))
	require.Len(t, stored.Items, len(v1.Benchmark.Items))
	for _, it := range stored.Items {
		require.Empty(t, it.Chosen, "the frozen event stores no text")
		require.Empty(t, it.Rejected, "the frozen event stores no text")
	}

	_, err = cmds.DeleteTrace.Handle(ctx, commands.DeleteTrace{Actor: alice, TraceID: gone.TraceID})
	require.NoError(t, err)
	require.Zero(t, dumpHas(gone.Chosen), "no event holds the erased trace's benchmark text in clear")

	n, err := cmds.Streams.VerifyBenchmarks(ctx)
	require.NoError(t, err, "a version with an erased item still verifies")
	require.Equal(t, 1, n)

	c, err := cmds.RequestCandidate.Handle(ctx, commands.RequestCandidate{Operator: "op"})
	require.NoError(t, err)
	require.Equal(t, []string{gone.ID}, c.Candidate.ErasedItems)
	raw, err := blobs.Get(ctx, c.Candidate.DatasetKey)
	require.NoError(t, err)
	var ds jobs.EvaluatorDataset
	require.NoError(t, json.Unmarshal(raw, &ds))
	require.Len(t, ds.Benchmark, len(v1.Benchmark.Items)-1, "the erased trace's item drops out")
	for i, it := range ds.Benchmark {
		require.NotEqual(t, gone.ID, it.ID)
		require.Equal(t, v1.Benchmark.Items[i+1].Chosen, it.Chosen, "the other items' text is rebuilt from the log")
		require.Equal(t, v1.Benchmark.Items[i+1].Rejected, it.Rejected)
	}
	vc, err := cmds.Streams.VerifyCandidateDatasets(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, vc)
}
