package duck

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestTraceListView: the trace_list view gives every trace the trace list's
// scores — the newest crediting model's mean credit and count, the task
// scores' trace score and outcome, the newest whole-trace score — in every
// load mode, including a copying sandbox whose query names only the view.
func TestTraceListView(t *testing.T) {
	t.Parallel()
	for _, mode := range []LoadMode{LoadReplica, LoadCopy, LoadAttach} {
		s, _ := newSnapshots(t, Options{Load: mode})
		seedTrace(t, s, "alice", "t1", 4, "ONE")
		seedTrace(t, s, "alice", "t2", 4, "TWO")
		later := t0.Add(time.Minute)
		applied, err := s.Apply(context.Background(), "alice", "scores", func(tx *Tx) error {
			ctx := context.Background()
			if err := tx.InsertActionScores(ctx, []ActionScoreRow{
				{TraceID: "t1", StepID: "t1-s2", StepIndex: 2, RewardModelID: "m1", RewardModelName: "first", Score: 1, Credit: 0.5, CreatedAt: t0},
				{TraceID: "t1", StepID: "t1-s3", StepIndex: 3, RewardModelID: "m1", RewardModelName: "first", Score: 1, Credit: 0.3, CreatedAt: t0},
				{TraceID: "t1", StepID: "t1-s2", StepIndex: 2, RewardModelID: "m2", RewardModelName: "second", Score: 0, Credit: -0.2, CreatedAt: later},
			}); err != nil {
				return err
			}
			for _, r := range []ScoreRow{
				{TraceID: "t1", RewardModelID: "m1", RewardModelName: "first", Score: 1.5, CreatedAt: t0},
				{TraceID: "t1", RewardModelID: "m2", RewardModelName: "second", Score: -0.5, CreatedAt: later},
			} {
				if err := tx.InsertScore(ctx, r); err != nil {
					return err
				}
			}
			score := 0.25
			return tx.InsertAssessment(ctx, nil, []TaskScoreRow{
				{TraceID: "t2", TaskID: "a", Score: 0.5, TraceScore: &score, TraceOutcome: "failure", Policy: "p", Source: "labels"},
				{TraceID: "t2", TaskID: "b", Score: 0, TraceScore: &score, TraceOutcome: "failure", Policy: "p", Source: "labels"},
			})
		})
		require.NoError(t, err)
		require.True(t, applied)
		res, err := s.Query(context.Background(), "alice", `SELECT id, action_credit, scored_actions, credit_model_id, trace_score, outcome,
			latest_score, latest_score_model_id FROM trace_list ORDER BY id`)
		require.NoError(t, err, "mode %v", mode)
		require.Equal(t, [][]any{
			{"t1", -0.2, int32(1), "m2", nil, nil, -0.5, "m2"},
			{"t2", nil, int32(0), nil, 0.25, "failure", nil, nil},
		}, res.Rows, "mode %v", mode)
	}
}
