package usecase_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/domain/traces"
	"github.com/criticml/critic/handlers/usecase"
	"github.com/criticml/critic/projections/readmodel"
)

// TestReviewQueueRanksByTheModelsUncertainty trains a model through the
// worker-service commands with known reward statistics and scores, then
// asks the queue: whole traces nobody rated, by calibrated score
// sigmoid((s − mean)/std) nearest 0.5, interleaved with unrated actions by
// credit nearest zero; rated traces and actions and stale scores are left
// out, a rating flagged as a label error does not count, and without a
// model the least annotated traces come first. The model shows its stats.
func TestReviewQueueRanksByTheModelsUncertainty(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newModelFixture(t) // a, b, c: rated as a whole (+1, −1, +1)
	cmds := f.b.Cmds
	actor := commands.Actor{UserID: f.caller.UserID}
	imp, err := cmds.ImportTraces.Handle(ctx, commands.ImportTraces{Actor: actor, Input: commands.ImportTracesInput{Format: "stash", Data: []byte(
		`{"id":"d","title":"D","steps":[{"role":"user","content":"q"},{"role":"assistant","content":"maybe"}]}` + "\n" +
			`{"id":"e","title":"E","steps":[{"role":"user","content":"q"},{"role":"assistant","content":"great"}]}` + "\n" +
			`{"id":"g","title":"G","steps":[{"role":"user","content":"q"},{"role":"assistant","content":"one"},{"role":"assistant","content":"two"}]}` + "\n" +
			`{"id":"h","title":"H","steps":[{"role":"user","content":"q"},{"role":"assistant","content":"let me think","metadata":{"thinking":true}},{"role":"assistant","content":"answer"}]}`)}})
	require.NoError(t, err)
	d, e, g, h := imp.TraceIDs[0], imp.TraceIDs[1], imp.TraceIDs[2], imp.TraceIDs[3]
	f.catchUp(t)
	step := func(trace string, i int) string {
		td, err := f.b.Queries.GetTrace(ctx, f.caller.UserID, trace)
		require.NoError(t, err)
		return td.Steps[i].ID
	}
	// d's whole-trace rating is flagged as a label error: d still needs a human.
	up, down := 1, -1
	ad, err := cmds.AddAnnotation.Handle(ctx, commands.AddAnnotation{Actor: actor, Input: commands.AddAnnotationInput{TraceID: d, Rating: &up, AuthorName: "t"}})
	require.NoError(t, err)
	yes := true
	_, err = cmds.EditAnnotation.Handle(ctx, commands.EditAnnotation{Actor: actor, TraceID: d, Edit: traces.EditAnnotationInput{AnnotationID: ad.AnnotationID, LabelError: traces.Optional[bool]{Set: true, Value: &yes}, EditorID: f.caller.UserID}})
	require.NoError(t, err)
	// e's action is rated: only e as a whole is left.
	_, err = cmds.AddAnnotation.Handle(ctx, commands.AddAnnotation{Actor: actor, Input: commands.AddAnnotationInput{TraceID: e, StepID: step(e, 1), Rating: &down, AuthorName: "t"}})
	require.NoError(t, err)
	f.catchUp(t)

	// Without a model: fewest annotations first, newest first among equals;
	// what the caller rated as a whole (a, b, c) has left their queue, a
	// rating flagged as a label error (d) does not count as judged.
	q, err := f.b.ReviewQueue(ctx, f.caller, usecase.Actor(f.caller).Member(), "", usecase.DefaultReviewLimit)
	require.NoError(t, err)
	require.Equal(t, usecase.RankUnannotated, q.Ranking)
	require.Nil(t, q.RewardModelID)
	var got []string
	for _, it := range q.Items {
		got = append(got, fmt.Sprintf("%s:%d", it.TraceTitle, *it.AnnotationCount))
	}
	titles := map[string]string{f.ids[0]: "a", f.ids[1]: "b", f.ids[2]: "c"}
	for i, it := range q.Items {
		if n, ok := titles[it.TraceID]; ok {
			got[i] = fmt.Sprintf("%s:%d", n, *it.AnnotationCount)
		}
	}
	require.Equal(t, []string{"H:0", "G:0", "E:1", "D:1"}, got)

	// A model, queued: nothing to rank by yet.
	req, err := cmds.RequestTraining.Handle(ctx, commands.RequestTraining{Actor: actor, Input: commands.RequestTrainingInput{Name: "m", TraceIDs: f.ids, MaxPairs: 10}})
	require.NoError(t, err)
	f.catchUp(t)
	_, err = f.b.ReviewQueue(ctx, f.caller, usecase.Actor(f.caller).Member(), req.ModelID, usecase.DefaultReviewLimit)
	var conflict *domain.ConflictError
	require.True(t, errors.As(err, &conflict), "%v", err)
	require.Equal(t, "model_not_ready", conflict.Code)

	// The worker reports stats mean 1, std 2, and these scores.
	_, err = cmds.BuildDataset.Handle(ctx, commands.BuildDataset{ModelID: req.ModelID})
	require.NoError(t, err)
	job, err := cmds.ClaimTraining.Handle(ctx, commands.ClaimTraining{WorkerID: "w1", ModelID: req.ModelID, Attempt: 1, Lease: time.Minute})
	require.NoError(t, err)
	require.NoError(t, f.store.Blobs().Put(ctx, job.ArtifactKey, []byte("checkpoint")))
	traceScore := map[string]float64{f.ids[0]: 3, f.ids[1]: -2, f.ids[2]: 1, d: 1.2, e: 5, g: -1}
	credit := map[string]float64{step(f.ids[0], 1): 0.01, step(f.ids[1], 1): -0.5, step(f.ids[2], 1): 0.95, step(d, 1): 0.3,
		step(e, 1): -0.04, step(g, 1): 0, step(g, 2): 0.02}
	// h's thinking step is not an action: the model never scores it (a
	// credit for it is refused as not an action of the dataset).
	var sl, al []string
	for id, s := range traceScore {
		sl = append(sl, fmt.Sprintf(`{"trace_id":%q,"score":%v}`, id, s))
	}
	for _, tr := range []string{f.ids[0], f.ids[1], f.ids[2], d, e, g, h} {
		td, err := f.b.Queries.GetTrace(ctx, f.caller.UserID, tr)
		require.NoError(t, err)
		for _, s := range td.Steps {
			if c, ok := credit[s.ID]; ok {
				al = append(al, fmt.Sprintf(`{"trace_id":%q,"step_id":%q,"score":%v,"credit":%v}`, tr, s.ID, c*3, c))
			}
		}
	}
	sk, ak := jobs.ScoresKey(f.caller.UserID, req.ModelID, 1), jobs.ActionScoresKey(f.caller.UserID, req.ModelID, 1)
	require.NoError(t, f.store.Blobs().Put(ctx, sk, []byte(strings.Join(sl, "\n"))))
	require.NoError(t, f.store.Blobs().Put(ctx, ak, []byte(strings.Join(al, "\n"))))
	_, err = cmds.CompleteTraining.Handle(ctx, commands.CompleteTraining{WorkerID: "w1", ModelID: req.ModelID, Attempt: 1,
		Metrics: json.RawMessage(`{"accuracy": 1, "eval_pairs": 0}`), RewardStats: json.RawMessage(`{"mean": 1, "std": 2, "count": 6}`),
		ActionStats: json.RawMessage(`{"mean": 0.5, "std": 1, "count": 4}`), ScoresKey: sk, ActionScoresKey: ak})
	require.NoError(t, err)
	// g changes after scoring: its scores are stale and leave the queue.
	_, err = cmds.ImportTraces.Handle(ctx, commands.ImportTraces{Actor: actor, Input: commands.ImportTracesInput{Format: "stash", Data: []byte(
		`{"id":"g","title":"G","steps":[{"role":"user","content":"q"},{"role":"assistant","content":"one"},{"role":"assistant","content":"three"}]}`)}})
	require.NoError(t, err)
	f.catchUp(t)

	// Migration 00064 fills the stats of models that succeeded before it
	// from their success events, as a replay would.
	_, err = f.store.Pool().Exec(ctx, `UPDATE rm_reward_models SET reward_stats = NULL, action_reward_stats = NULL`)
	require.NoError(t, err)
	migration, err := os.ReadFile("../../migrations/00064_reward_model_stats.sql")
	require.NoError(t, err)
	backfill := string(migration)[strings.Index(string(migration), "UPDATE rm_reward_models"):strings.Index(string(migration), "-- +goose Down")]
	_, err = f.store.Pool().Exec(ctx, backfill)
	require.NoError(t, err)

	m, err := f.b.Queries.GetRewardModel(ctx, f.caller.UserID, req.ModelID)
	require.NoError(t, err)
	require.Equal(t, &rewardmodels.RewardStats{Mean: 1, Std: 2, Count: 6}, m.RewardStats)
	require.Equal(t, &rewardmodels.RewardStats{Mean: 0.5, Std: 1, Count: 4}, m.ActionRewardStats)
	list, err := f.b.Queries.ListRewardModels(ctx, f.caller.UserID)
	require.NoError(t, err)
	require.Equal(t, m.RewardStats, list[0].RewardStats)

	q, err = f.b.ReviewQueue(ctx, f.caller, usecase.Actor(f.caller).Member(), req.ModelID, usecase.DefaultReviewLimit)
	require.NoError(t, err)
	require.Equal(t, usecase.RankUncertainty, q.Ranking)
	require.Equal(t, req.ModelID, *q.RewardModelID)
	require.Contains(t, *q.Calibration, "sigmoid((score − mean) / std)")
	type row struct {
		kind, trace string
		step        int
		u           float64
	}
	var rows []row
	for _, it := range q.Items {
		r := row{kind: it.Kind, trace: it.TraceID, step: -1, u: math.Round(*it.Uncertainty*1e4) / 1e4}
		if it.StepIndex != nil {
			r.step = *it.StepIndex
		}
		rows = append(rows, r)
	}
	u := func(z float64) float64 { return math.Round(math.Abs(math.Tanh(z/2))*1e4) / 1e4 }
	// h's thinking step is not an action a reviewer rates: it is never
	// scored, so never queued.
	require.Equal(t, []row{
		{"action", f.ids[0], 1, 0.01},
		{"trace", d, -1, u(0.1)}, // (1.2 − 1) / 2
		{"action", d, 1, 0.3},
		{"action", f.ids[1], 1, 0.5},
		{"trace", e, -1, u(2)}, // (5 − 1) / 2
		{"action", f.ids[2], 1, 0.95},
	}, rows)
	dItem := q.Items[1]
	require.InDelta(t, 1/(1+math.Exp(-0.1)), *dItem.Calibrated, 1e-9)
	require.InDelta(t, 1.2, *dItem.Score, 1e-9)
	require.Nil(t, dItem.Credit)
	require.Equal(t, "D", dItem.TraceTitle)
	require.InDelta(t, 0.01, *q.Items[0].Credit, 1e-9)
	require.Nil(t, q.Items[0].Calibrated)

	q, err = f.b.ReviewQueue(ctx, f.caller, usecase.Actor(f.caller).Member(), req.ModelID, 2)
	require.NoError(t, err)
	require.Len(t, q.Items, 2)
	require.Equal(t, d, q.Items[1].TraceID)

	// Another account's model is not found.
	other, err := cmds.CreateUser.Handle(ctx, commands.CreateUser{Name: "someone-else"})
	require.NoError(t, err)
	f.catchUp(t)
	_, err = f.b.ReviewQueue(ctx, &readmodel.Caller{UserID: other.UserID}, other.UserID, req.ModelID, 10)
	var nf *domain.NotFoundError
	require.True(t, errors.As(err, &nf), "%v", err)
}
