package readmodel_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/projections/readmodel"
)

// TestModelSaysWhatWasErased: a model trained on three traces, one of them
// deleted (erased) afterwards, still reads, and its detail counts the
// erased trace with the consent wording (weights cannot unlearn); its
// stored dataset, which holds the pairs' text in clear, is deleted, while a
// model trained on other traces keeps its own.
func TestModelSaysWhatWasErased(t *testing.T) {
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
	u, err := cmds.CreateUser.Handle(ctx, commands.CreateUser{Name: "eraser"})
	require.NoError(t, err)
	actor := commands.Actor{UserID: u.UserID}
	imp, err := cmds.ImportTraces.Handle(ctx, commands.ImportTraces{Actor: actor, Input: commands.ImportTracesInput{Format: "stash", Data: []byte(
		`{"id":"a","steps":[{"role":"user","content":"q"},{"role":"assistant","content":"good"}]}` + "\n" +
			`{"id":"b","steps":[{"role":"user","content":"q"},{"role":"assistant","content":"bad"}]}` + "\n" +
			`{"id":"c","steps":[{"role":"user","content":"q2"},{"role":"assistant","content":"fine"}]}` + "\n" +
			`{"id":"d","steps":[{"role":"user","content":"q"},{"role":"assistant","content":"nice"}]}` + "\n" +
			`{"id":"e","steps":[{"role":"user","content":"q"},{"role":"assistant","content":"poor"}]}` + "\n" +
			`{"id":"f","steps":[{"role":"user","content":"q2"},{"role":"assistant","content":"ok"}]}`)}})
	require.NoError(t, err)
	for i, r := range []int{1, -1, 1, 1, -1, 1} {
		_, err := cmds.AddAnnotation.Handle(ctx, commands.AddAnnotation{Actor: actor, Input: commands.AddAnnotationInput{TraceID: imp.TraceIDs[i], Rating: &r, AuthorName: "t"}})
		require.NoError(t, err)
	}
	req, err := cmds.RequestTraining.Handle(ctx, commands.RequestTraining{Actor: actor, Input: commands.RequestTrainingInput{Name: "m", TraceIDs: imp.TraceIDs[:3]}})
	require.NoError(t, err)
	other, err := cmds.RequestTraining.Handle(ctx, commands.RequestTraining{Actor: actor, Input: commands.RequestTrainingInput{Name: "other", TraceIDs: imp.TraceIDs[3:]}})
	require.NoError(t, err)
	for _, id := range []string{req.ModelID, other.ModelID} {
		_, err = cmds.BuildDataset.Handle(ctx, commands.BuildDataset{ModelID: id})
		require.NoError(t, err)
	}
	dataset := commands.DatasetKey(u.UserID, req.ModelID, 1)
	otherDataset := commands.DatasetKey(u.UserID, other.ModelID, 1)
	exists := func(key string) bool {
		ok, err := blobs.Exists(ctx, key)
		require.NoError(t, err)
		return ok
	}
	require.True(t, exists(dataset))
	require.True(t, exists(otherDataset))
	catchUp()
	d, err := q.GetRewardModel(ctx, u.UserID, req.ModelID)
	require.NoError(t, err)
	require.Zero(t, d.ErasedTraces)
	require.Nil(t, d.ErasedNotice)

	_, err = cmds.DeleteTrace.Handle(ctx, commands.DeleteTrace{Actor: actor, TraceID: imp.TraceIDs[1]})
	require.NoError(t, err)
	catchUp()
	d, err = q.GetRewardModel(ctx, u.UserID, req.ModelID)
	require.NoError(t, err)
	require.Equal(t, 3, d.TraceCount, "the model still names what it was trained on")
	require.Equal(t, 1, d.ErasedTraces)
	require.NotNil(t, d.ErasedNotice)
	require.Equal(t, "Trained on 1 trace since erased. Weights cannot unlearn data they were trained on.", *d.ErasedNotice)
	require.False(t, exists(dataset), "the dataset quoting the erased trace is deleted")
	require.True(t, exists(otherDataset), "a model not trained on it keeps its dataset")
}
