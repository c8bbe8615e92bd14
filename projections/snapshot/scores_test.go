package snapshot

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain/events"
)

// Scores land only for the revision the snapshot holds, the latest per
// (trace, model) and per (step, model), at the step's current position;
// a step scored twice in one event keeps the later score, a step the trace
// no longer has is skipped, and another model's scores are left alone. The
// evaluator's scores of a revision replace the trace's earlier ones.
func TestScoresLandForTheCurrentRevision(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	as := func(model string, scores ...events.ActionScore) events.Envelope {
		return f.ev("alice", events.ActionsScored, events.ActionsScoredV1{ModelID: model, ModelName: model + "-name", Scores: scores})
	}
	ts := func(model string, scores ...events.TraceScore) events.Envelope {
		return f.ev("alice", events.TracesScored, events.TracesScoredV1{ModelID: model, ModelName: model + "-name", Scores: scores})
	}
	require.NoError(t, f.proj.Apply(ctx, []events.Envelope{
		f.ev("alice", events.TraceImported, events.TraceImportedV1{TraceID: "t1", Title: "one", SourceFormat: "stash", Revision: 1,
			Steps: steps("t1", "user", "assistant", "user", "assistant")}),
		f.ev("alice", events.TraceImported, events.TraceImportedV1{TraceID: "t2", Title: "two", SourceFormat: "stash", Revision: 1,
			Steps: steps("t2", "user", "assistant")}),
		as("m1", events.ActionScore{TraceID: "t1", StepID: "t1-s1", Revision: 1, Score: 0.1, Credit: 0.1},
			events.ActionScore{TraceID: "t1", StepID: "t1-s3", Revision: 1, Score: 0.3, Credit: 0.3},
			events.ActionScore{TraceID: "t2", StepID: "t2-s1", Revision: 1, Score: 0.5, Credit: 0.5}),
		as("m2", events.ActionScore{TraceID: "t1", StepID: "t1-s1", Revision: 1, Score: 9, Credit: 9}),
		ts("m1", events.TraceScore{TraceID: "t1", Revision: 1, Score: 1}, events.TraceScore{TraceID: "t2", Revision: 1, Score: 2}),
	}))
	// t2 is re-imported: revision 2 has one step fewer than the stale scores name.
	require.NoError(t, f.proj.Apply(ctx, []events.Envelope{
		f.ev("alice", events.TraceRevised, events.TraceRevisedV1{TraceID: "t2", Revision: 2, Mode: events.RevisionReplaced, Title: "two",
			SourceFormat: "stash", Steps: steps("t2", "assistant")}),
		// Stale (revision 1 of t2) and current ones in the same events.
		as("m1", events.ActionScore{TraceID: "t1", StepID: "t1-s1", Revision: 1, Score: 0.11, Credit: 0.11},
			events.ActionScore{TraceID: "t1", StepID: "t1-s1", Revision: 1, Score: 0.12, Credit: 0.12},
			events.ActionScore{TraceID: "t1", StepID: "t1-gone", Revision: 1, Score: 7, Credit: 7},
			events.ActionScore{TraceID: "t2", StepID: "t2-s1", Revision: 1, Score: 0.6, Credit: 0.6},
			events.ActionScore{TraceID: "t2", StepID: "t2-s0", Revision: 2, Score: 0.7, Credit: 0.7}),
		ts("m1", events.TraceScore{TraceID: "t1", Revision: 1, Score: 1.5}, events.TraceScore{TraceID: "t2", Revision: 1, Score: 3},
			events.TraceScore{TraceID: "t1", Revision: 1, Score: 1.6}),
		f.ev("alice", events.EvaluatorTraceScored, events.EvaluatorTraceScoredV1{TraceID: "t1", TraceRevision: 1, Release: 1,
			Scores: []events.EvaluatorActionScore{{StepID: "t1-s1", Score: 0.2, Credit: 0.2}, {StepID: "t1-s3", Score: 0.4, Credit: 0.4}}}),
		f.ev("alice", events.EvaluatorTraceScored, events.EvaluatorTraceScoredV1{TraceID: "t1", TraceRevision: 1, Release: 2,
			Scores: []events.EvaluatorActionScore{{StepID: "t1-s3", Score: 0.8, Credit: 0.8}}}),
		f.ev("alice", events.EvaluatorTraceScored, events.EvaluatorTraceScoredV1{TraceID: "t2", TraceRevision: 1, Release: 2,
			Scores: []events.EvaluatorActionScore{{StepID: "t2-s1", Score: 0.9, Credit: 0.9}}}),
	}))
	require.Equal(t, [][]any{
		{"t1", "t1-s1", int32(1), "m1", "m1-name", 0.12, 0.12},
		{"t1", "t1-s1", int32(1), "m2", "m2-name", 9.0, 9.0},
		{"t1", "t1-s3", int32(3), "m1", "m1-name", 0.3, 0.3},
		{"t2", "t2-s0", int32(0), "m1", "m1-name", 0.7, 0.7},
	}, f.rows("alice", "SELECT trace_id, step_id, step_index, reward_model_id, reward_model_name, score, credit FROM action_scores ORDER BY ALL"))
	require.Equal(t, [][]any{{"t1", "m1", "m1-name", 1.6}},
		f.rows("alice", "SELECT trace_id, reward_model_id, reward_model_name, score FROM scores ORDER BY ALL"))
	require.Equal(t, [][]any{{"t1", "t1-s3", int32(3), int32(2), int32(1), 0.8}},
		f.rows("alice", "SELECT trace_id, step_id, step_index, release, trace_revision, score FROM evaluator_scores ORDER BY ALL"))
}
