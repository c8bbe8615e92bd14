package commands_test

import (
	"context"
	"encoding/json"
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
)

// TestCompleteTrainingReadsOnlyTheKeysOfTheJob: a worker's success report
// naming any blob key but the ones derived from the job (owner, model,
// attempt) is refused before anything is read, and the score files are read
// within bounds (line length, one line per dataset item).
func TestCompleteTrainingReadsOnlyTheKeysOfTheJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cmds, store, actor := setup(t)
	ids := commandstest.RatedTraces(t, cmds, actor)
	req, err := cmds.RequestTraining.Handle(ctx, commands.RequestTraining{Actor: actor, Input: commands.RequestTrainingInput{Name: "m", TraceIDs: ids}})
	require.NoError(t, err)
	_, err = cmds.BuildDataset.Handle(ctx, commands.BuildDataset{ModelID: req.ModelID})
	require.NoError(t, err)
	job, err := cmds.ClaimTraining.Handle(ctx, commands.ClaimTraining{WorkerID: "w1", ModelID: req.ModelID, Attempt: 1, Lease: time.Minute})
	require.NoError(t, err)
	blobs := store.Blobs()
	require.NoError(t, blobs.Put(ctx, job.ArtifactKey, []byte("checkpoint")))

	scoresKey := jobs.ScoresKey(actor.UserID, req.ModelID, 1)
	require.Equal(t, "jobs/"+actor.UserID+"/"+req.ModelID+"/attempt-1/scores.jsonl", scoresKey)
	good := fmt.Sprintf(`{"trace_id":%q,"score":0.5}`+"\n", ids[0])
	complete := func(scores, actions string) error {
		_, err := cmds.CompleteTraining.Handle(ctx, commands.CompleteTraining{WorkerID: "w1", ModelID: req.ModelID, Attempt: 1,
			Metrics: json.RawMessage(`{"eval_pairs":0}`), ScoresKey: scores, ActionScoresKey: actions})
		return err
	}
	var invalid *domain.ValidationError

	// Keys the job did not issue: another object of the store (the dataset,
	// another owner's files, another attempt's) is never read.
	for _, foreign := range []string{
		job.DatasetKey,
		jobs.ScoresKey("someone-else", req.ModelID, 1),
		jobs.ScoresKey(actor.UserID, req.ModelID, 2),
		"jobs/" + req.ModelID + "/attempt-1/scores.jsonl",
	} {
		require.NoError(t, blobs.Put(ctx, foreign+".probe", []byte(good)))
		err := complete(foreign, "")
		require.ErrorAs(t, err, &invalid, foreign)
		require.Equal(t, "scores_key", invalid.Field)
		require.Contains(t, invalid.Message, scoresKey)
	}
	err = complete(scoresKey, job.DatasetKey)
	require.ErrorAs(t, err, &invalid)
	require.Equal(t, "action_scores_key", invalid.Field)

	// Bounded reads of the job's own file.
	require.NoError(t, blobs.Put(ctx, scoresKey, []byte(`{"trace_id":"`+strings.Repeat("x", jobs.MaxScoreLineBytes)+`"}`+"\n")))
	require.ErrorContains(t, complete(scoresKey, ""), "longer than 65536 bytes")
	require.NoError(t, blobs.Put(ctx, scoresKey, []byte(strings.Repeat(good, 10))))
	require.ErrorContains(t, complete(scoresKey, ""), "more score lines than the")

	m, err := cmds.Streams.Model(ctx, req.ModelID)
	require.NoError(t, err)
	require.Equal(t, rewardmodels.StatusRunning, m.Status, "nothing refused was recorded")

	require.NoError(t, blobs.Put(ctx, scoresKey, []byte(good)))
	require.NoError(t, complete(scoresKey, ""))
	loaded, err := store.LoadStreams(ctx, []string{events.ScoresStream(req.ModelID)})
	require.NoError(t, err)
	require.Len(t, loaded[events.ScoresStream(req.ModelID)], 1)
	require.Contains(t, string(loaded[events.ScoresStream(req.ModelID)][0].Payload), ids[0])
}
