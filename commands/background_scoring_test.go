package commands_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/commands/commandstest"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/platform/eventstore"
)

// readyActionModel trains a model on ratedPair's traces as a worker would
// report it: succeeded, trained on action comparisons.
func readyActionModel(t *testing.T, cmds *commands.Commands, store *eventstore.Store, actor commands.Actor) string {
	t.Helper()
	ctx := context.Background()
	req, err := cmds.RequestTraining.Handle(ctx, commands.RequestTraining{Actor: actor, Input: commands.RequestTrainingInput{Name: "m", TraceIDs: commandstest.RatedTraces(t, cmds, actor)}})
	require.NoError(t, err)
	_, err = cmds.BuildDataset.Handle(ctx, commands.BuildDataset{ModelID: req.ModelID})
	require.NoError(t, err)
	_, err = cmds.ClaimTraining.Handle(ctx, commands.ClaimTraining{WorkerID: "trainer", ModelID: req.ModelID, Attempt: 1, Lease: time.Minute})
	require.NoError(t, err)
	require.NoError(t, store.Blobs().Put(ctx, jobs.ArtifactKey(actor.UserID, req.ModelID), []byte("checkpoint")))
	_, err = cmds.CompleteTraining.Handle(ctx, commands.CompleteTraining{WorkerID: "trainer", ModelID: req.ModelID, Attempt: 1,
		Metrics: json.RawMessage(`{"action_scoring_version":1}`), RewardStats: json.RawMessage(`{"mean":0,"std":1}`),
		ActionStats: json.RawMessage(`{"mean":0,"std":1}`)})
	require.NoError(t, err)
	return req.ModelID
}

func importNew(t *testing.T, cmds *commands.Commands, actor commands.Actor, data string) []string {
	t.Helper()
	res, err := cmds.ImportTraces.Handle(context.Background(), commands.ImportTraces{Actor: actor, Input: commands.ImportTracesInput{Format: "stash", Data: []byte(data)}})
	require.NoError(t, err)
	return res.TraceIDs
}

func batchCall(t *testing.T, worker, modelID string, body any) jobs.Call {
	t.Helper()
	msg, err := json.Marshal(jobs.ScoreBatchJob{ModelID: modelID})
	require.NoError(t, err)
	c := jobs.Call{WorkerID: worker, Job: msg}
	if body != nil {
		c.Body, err = json.Marshal(body)
		require.NoError(t, err)
	}
	return c
}

func scoringOf(t *testing.T, store *eventstore.Store, traceID, modelID string) rewardmodels.ScoringState {
	t.Helper()
	stream := events.ScoringStream(traceID, modelID)
	loaded, err := store.LoadStreams(context.Background(), []string{stream})
	require.NoError(t, err)
	var sc rewardmodels.ScoringState
	for _, e := range loaded[stream] {
		require.NoError(t, sc.Apply(e))
	}
	return sc
}

// Background scoring end to end through the worker service's commands: a
// batch of three traces is claimed as a worker claims it; the first trace's
// scores publish while the others still run; a failed trace is an automatic
// attempt; the worker's finish fails the trace it gave no result for. Three
// automatic failures of a revision make it ineligible, while an explicit
// request still runs.
func TestBackgroundBatchPublishesEachTraceAndCountsAttempts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cmds, store, actor := setup(t)
	modelID := readyActionModel(t, cmds, store, actor)
	ids := importNew(t, cmds, actor, `{"id":"n1","steps":[{"role":"user","content":"q"},{"role":"assistant","content":"one"}]}`+"\n"+
		`{"id":"n2","steps":[{"role":"user","content":"q"},{"role":"assistant","content":"two"}]}`+"\n"+
		`{"id":"n3","steps":[{"role":"user","content":"q"},{"role":"assistant","content":"three"}]}`+"\n"+
		`{"id":"n4","steps":[{"role":"user","content":"only a question"}]}`)

	b, err := cmds.RequestBackgroundBatch.Handle(ctx, commands.RequestBackgroundBatch{ModelID: modelID, TraceIDs: ids})
	require.NoError(t, err)
	require.NotEmpty(t, b.BatchID)
	require.Equal(t, ids[:3], b.TraceIDs)
	require.Equal(t, []string{ids[3]}, b.NoActions, "a trace with nothing to score is left out")
	again, err := cmds.RequestBackgroundBatch.Handle(ctx, commands.RequestBackgroundBatch{ModelID: modelID, TraceIDs: ids})
	require.NoError(t, err)
	require.Empty(t, again.BatchID, "queued traces are not requested twice")

	out, err := cmds.Job.Handle(ctx, commands.Job{Kind: jobs.KindScoreBatch, ID: b.BatchID, Action: jobs.Claim, Call: batchCall(t, "w1", modelID, nil), Lease: time.Minute})
	require.NoError(t, err)
	claim := out.(jobs.ScoreBatchClaim)
	require.Len(t, claim.Runs, 3)
	_, err = cmds.Job.Handle(ctx, commands.Job{Kind: jobs.KindScoreBatch, ID: b.BatchID, Action: jobs.Claim, Call: batchCall(t, "w2", modelID, nil), Lease: time.Minute})
	var conflict *domain.ConflictError
	require.ErrorAs(t, err, &conflict, "a duplicate delivery claims nothing")
	require.Equal(t, "not_claimable", conflict.Code)

	// The worker reads the first trace's items and reports its result.
	raw, err := store.Blobs().Get(ctx, claim.Runs[0].ItemsKey)
	require.NoError(t, err)
	var items jobs.ScoringItems
	require.NoError(t, json.Unmarshal(raw, &items))
	require.Len(t, items.ActionScoreItems, 1)
	require.Equal(t, ids[0], items.Trace.TraceID, "the trace item is scored too")
	score := 0.25
	_, err = cmds.Job.Handle(ctx, commands.Job{Kind: jobs.KindScoreBatch, ID: b.BatchID, Action: jobs.Report, Call: batchCall(t, "w1", modelID, jobs.ScoreBatchReport{
		TraceID: ids[0], RunID: claim.Runs[0].RunID, ScoringFinished: jobs.ScoringFinished{TraceScore: &score,
			ActionScores: []jobs.ActionScore{{TraceID: ids[0], StepID: items.ActionScoreItems[0].StepID, Score: 0.5, Credit: 0.2}}}}), Lease: time.Minute})
	require.NoError(t, err)
	require.Equal(t, rewardmodels.RunSucceeded, scoringOf(t, store, ids[0], modelID).Status)
	require.Equal(t, rewardmodels.RunRunning, scoringOf(t, store, ids[1], modelID).Status, "the others still run")
	loaded, err := store.LoadStreams(ctx, []string{events.ScoresStream(modelID)})
	require.NoError(t, err)
	var published []string
	for _, e := range loaded[events.ScoresStream(modelID)] {
		switch e.Type {
		case events.TracesScored:
			var p events.TracesScoredV1
			require.NoError(t, e.Decode(&p))
			if len(p.Scores) == 1 && p.Scores[0].TraceID == ids[0] {
				require.Equal(t, 0.25, p.Scores[0].Score)
				published = append(published, e.Type)
			}
		case events.ActionsScored:
			var p events.ActionsScoredV1
			require.NoError(t, e.Decode(&p))
			if p.RunID == claim.Runs[0].RunID {
				require.Len(t, p.Scores, 1)
				published = append(published, e.Type)
			}
		}
	}
	require.ElementsMatch(t, []string{events.TracesScored, events.ActionsScored}, published, "the first trace's scores publish before the batch ends")

	_, err = cmds.Job.Handle(ctx, commands.Job{Kind: jobs.KindScoreBatch, ID: b.BatchID, Action: jobs.Report, Call: batchCall(t, "w1", modelID, jobs.ScoreBatchReport{
		TraceID: ids[1], RunID: claim.Runs[1].RunID, Error: "the model produced a non-finite score"}), Lease: time.Minute})
	require.NoError(t, err)
	_, err = cmds.Job.Handle(ctx, commands.Job{Kind: jobs.KindScoreBatch, ID: b.BatchID, Action: jobs.Finish, Call: batchCall(t, "w1", modelID, nil), Lease: time.Minute})
	require.NoError(t, err)
	third := scoringOf(t, store, ids[2], modelID)
	require.Equal(t, rewardmodels.RunFailed, third.Status, "finish fails the trace the worker gave no result for")
	second := scoringOf(t, store, ids[1], modelID)
	require.Equal(t, rewardmodels.RunFailed, second.Status)
	require.Equal(t, 1, second.AutomaticFailures(1))

	// Two more automatic attempts of trace 2 fail; then it is left alone.
	for attempt := 2; attempt <= 3; attempt++ {
		b, err := cmds.RequestBackgroundBatch.Handle(ctx, commands.RequestBackgroundBatch{ModelID: modelID, TraceIDs: ids[1:2]})
		require.NoError(t, err)
		require.NotEmpty(t, b.BatchID, "attempt %d", attempt)
		out, err := cmds.Job.Handle(ctx, commands.Job{Kind: jobs.KindScoreBatch, ID: b.BatchID, Action: jobs.Claim, Call: batchCall(t, "w1", modelID, nil), Lease: time.Minute})
		require.NoError(t, err)
		_, err = cmds.Job.Handle(ctx, commands.Job{Kind: jobs.KindScoreBatch, ID: b.BatchID, Action: jobs.Fail, Call: batchCall(t, "w1", modelID, nil), Lease: time.Minute})
		require.NoError(t, err)
		require.Len(t, out.(jobs.ScoreBatchClaim).Runs, 1)
	}
	require.Equal(t, 3, scoringOf(t, store, ids[1], modelID).AutomaticFailures(1))
	b, err = cmds.RequestBackgroundBatch.Handle(ctx, commands.RequestBackgroundBatch{ModelID: modelID, TraceIDs: ids[:3]})
	require.NoError(t, err)
	require.Equal(t, []string{ids[2]}, b.TraceIDs, "trace 2 used up its attempts, trace 1 is scored; trace 3 has two left")
	r, err := cmds.RequestScoring.Handle(ctx, commands.RequestScoring{Actor: actor, TraceID: ids[1], ModelID: modelID})
	require.NoError(t, err)
	require.NotEmpty(t, r.LastEventID, "an explicit request still runs")
	require.Equal(t, rewardmodels.RunQueued, scoringOf(t, store, ids[1], modelID).Status)
}

// An explicit request for a trace whose automatic run still waits in its
// batch jumps the queue: a run of its own, published alone, and the batch
// no longer claims the superseded run. Pausing stops background requests;
// the paused model still scores on request.
func TestExplicitScoringJumpsTheBatchAndPauseStopsBackground(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cmds, store, actor := setup(t)
	modelID := readyActionModel(t, cmds, store, actor)
	ids := importNew(t, cmds, actor, `{"id":"j1","steps":[{"role":"user","content":"q"},{"role":"assistant","content":"one"}]}`)
	b, err := cmds.RequestBackgroundBatch.Handle(ctx, commands.RequestBackgroundBatch{ModelID: modelID, TraceIDs: ids})
	require.NoError(t, err)
	queued := scoringOf(t, store, ids[0], modelID).RunID
	r, err := cmds.RequestScoring.Handle(ctx, commands.RequestScoring{Actor: actor, TraceID: ids[0], ModelID: modelID})
	require.NoError(t, err)
	require.NotEqual(t, queued, r.RunID)
	sc := scoringOf(t, store, ids[0], modelID)
	require.False(t, sc.Automatic)
	_, err = cmds.Job.Handle(ctx, commands.Job{Kind: jobs.KindScoreBatch, ID: b.BatchID, Action: jobs.Claim, Call: batchCall(t, "w1", modelID, nil), Lease: time.Minute})
	var conflict *domain.ConflictError
	require.ErrorAs(t, err, &conflict, "the superseded run is not claimed")
	_, err = cmds.ClaimScoring.Handle(ctx, commands.ClaimScoring{WorkerID: "w1", TraceID: ids[0], ModelID: modelID, RunID: r.RunID})
	require.NoError(t, err, "the explicit run is claimed alone")

	_, err = cmds.SetBackgroundScoring.Handle(ctx, commands.SetBackgroundScoring{Actor: commands.Actor{UserID: "00000000-0000-0000-0000-000000000001"}, ModelID: modelID, Paused: true})
	var notFound *domain.NotFoundError
	require.ErrorAs(t, err, &notFound, "another user's model")
	_, err = cmds.SetBackgroundScoring.Handle(ctx, commands.SetBackgroundScoring{Actor: actor, ModelID: modelID, Paused: true})
	require.NoError(t, err)
	more := importNew(t, cmds, actor, `{"id":"j2","steps":[{"role":"user","content":"q"},{"role":"assistant","content":"two"}]}`)
	b, err = cmds.RequestBackgroundBatch.Handle(ctx, commands.RequestBackgroundBatch{ModelID: modelID, TraceIDs: more})
	require.NoError(t, err)
	require.Empty(t, b.BatchID, "a paused model requests nothing")
	r, err = cmds.RequestScoring.Handle(ctx, commands.RequestScoring{Actor: actor, TraceID: more[0], ModelID: modelID})
	require.NoError(t, err)
	require.NotEmpty(t, r.LastEventID, "a paused model still scores on request")
	_, err = cmds.SetBackgroundScoring.Handle(ctx, commands.SetBackgroundScoring{Actor: actor, ModelID: modelID})
	require.NoError(t, err)
	m, err := cmds.Streams.Model(ctx, modelID)
	require.NoError(t, err)
	require.False(t, m.ScoringPaused)
}
