package snapshot

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/labels"
)

func label(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(s), &m))
	return map[string]any{"label": m}
}

const (
	reqLabel    = `{"chunk_id":"c1","task_id":"t1","actor":"user","intent":"request","verdict":"none","verdict_target":null,"sentiment":"neutral","evidence":"","note":""}`
	callLabel   = `{"chunk_id":"c2","task_id":"t1","actor":"agent","type":"tool_call","effect":"lookup","result":"ok","duplicate_of":null,"is_output":false,"outcome":"none","stance":"none","coverage":"none","evidence":"","note":""}`
	answerLabel = `{"chunk_id":"c3","task_id":"t1","actor":"agent","type":"answer","effect":"none","result":"none","duplicate_of":null,"is_output":true,"outcome":"solved","stance":"confident","coverage":"full","evidence":"Refunded","note":"n"}`
	thanksLabel = `{"chunk_id":"c4","task_id":"t1","actor":"user","intent":"feedback","verdict":"confirmed","verdict_target":"c3","sentiment":"positive","evidence":"worked","note":""}`
)

// TestStepLabelsAndTaskScores: imported labels become step_labels and
// task_scores rows; a synced revision that adds the user's confirmation
// rescores the trace; deleting it removes the rows; a redelivery changes
// nothing.
func TestStepLabelsAndTaskScores(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	s := steps("t1", "system", "user", "assistant", "tool", "assistant")
	s[1].Metadata = label(t, reqLabel)
	s[2].ToolName, s[2].ToolCallID, s[2].Metadata = "lookup_order", "k1", label(t, callLabel)
	s[3].ToolCallID = "k1"
	s[4].Metadata = label(t, answerLabel)
	imp := f.ev("alice", events.TraceImported, events.TraceImportedV1{TraceID: "t1", Title: "Refund", SourceFormat: "stash", Revision: 1, Steps: s})
	require.NoError(t, f.proj.Apply(ctx, []events.Envelope{imp}))

	const labelsSQL = `SELECT step_id, step_index, chunk_id, task_id, actor, intent, verdict, verdict_target, type, effect, result, is_output, outcome, note, score, credit, expected_credit
		FROM step_labels ORDER BY step_index`
	require.Equal(t, [][]any{
		{"t1-s1", int32(1), "c1", "t1", "user", "request", "none", nil, nil, nil, nil, nil, nil, "", nil, nil, nil},
		{"t1-s2", int32(2), "c2", "t1", "agent", nil, nil, nil, "tool_call", "lookup", "ok", false, "none", "", -0.03, int32(0), nil},
		{"t1-s4", int32(4), "c3", "t1", "agent", nil, nil, nil, "answer", "none", "none", true, "solved", "n", 0.25, int32(0), nil},
	}, f.rows("alice", labelsSQL))
	const tasksSQL = `SELECT trace_id, task_id, first_step_index, last_step_index, answer_step_index, answer_points, work, score, capped, trace_score, trace_outcome, source
		FROM task_scores`
	require.Equal(t, [][]any{{"t1", "t1", int32(1), int32(4), int32(4), 0.25, -0.03, 0.22, false, 0.22, "partial_success", "labels"}},
		f.rows("alice", tasksSQL))

	rev := f.ev("alice", events.TraceRevised, events.TraceRevisedV1{TraceID: "t1", Revision: 2, Mode: events.RevisionAppended, Title: "Refund",
		SourceFormat: "stash", Steps: []events.StepRecord{{ID: "t1-s5", Index: 5, Step: domain.Step{Role: "user", Content: "it worked", Metadata: label(t, thanksLabel)}}}})
	require.NoError(t, f.proj.Apply(ctx, []events.Envelope{rev}))
	require.Equal(t, [][]any{{"t1", "t1", int32(1), int32(5), int32(4), 1.0, -0.03, 0.97, false, 0.97, "success", "labels"}},
		f.rows("alice", tasksSQL))
	require.Equal(t, [][]any{{"c2", 0.21}, {"c3", 1.0}}, f.rows("alice", "SELECT chunk_id, score FROM step_labels WHERE actor = 'agent' ORDER BY step_index"))
	require.Equal(t, [][]any{{"c3"}}, f.rows("alice", "SELECT verdict_target FROM step_labels WHERE chunk_id = 'c4'"))

	before := f.rows("alice", labelsSQL)
	require.NoError(t, f.proj.Apply(ctx, []events.Envelope{imp, rev}))
	require.Equal(t, before, f.rows("alice", labelsSQL), "a redelivered event changes nothing")

	// An unlabeled trace has no rows; deleting the labeled one removes its.
	plain := f.ev("alice", events.TraceImported, events.TraceImportedV1{TraceID: "t2", Title: "x", SourceFormat: "stash", Revision: 1, Steps: steps("t2", "user", "assistant")})
	del := f.ev("alice", events.TraceDeleted, events.TraceDeletedV1{TraceID: "t1"})
	require.NoError(t, f.proj.Apply(ctx, []events.Envelope{plain, del}))
	require.Equal(t, [][]any{{int64(0), int64(0)}}, f.rows("alice", "SELECT (SELECT count(*) FROM step_labels), (SELECT count(*) FROM task_scores)"))
}

// TestModelLabelsInTheSnapshot: trace.steps_labeled labels the chunks of a
// stored trace by chunk id and rescores it; labels for a deleted trace are
// dropped, and deleting the trace removes its labels with it.
func TestModelLabelsInTheSnapshot(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	s := steps("t1", "user", "assistant")
	all := []domain.Step{s[0].Step, s[1].Step}
	cs := labels.Chunks(all)
	yes := true
	answer := labels.Label{ChunkID: cs[1].ID, TaskID: "t", Actor: labels.ActorAgent, Type: labels.TypeAnswer, Effect: labels.EffectNone,
		Result: labels.ResultNone, IsOutput: &yes, Outcome: labels.OutcomeFailed, Stance: labels.StanceConfident, Coverage: labels.CoverageNone}
	imp := f.ev("alice", events.TraceImported, events.TraceImportedV1{TraceID: "t1", Title: "x", SourceFormat: "stash", Revision: 1, Steps: s})
	lab := f.ev("alice", events.TraceStepsLabeled, events.TraceStepsLabeledV1{TraceID: "t1", Revision: 1, Model: "m", Labels: []labels.Label{answer}})
	orphan := f.ev("alice", events.TraceStepsLabeled, events.TraceStepsLabeledV1{TraceID: "t9", Revision: 1, Model: "m", Labels: []labels.Label{answer}})
	require.NoError(t, f.proj.Apply(ctx, []events.Envelope{imp, lab, orphan, lab}))
	require.Equal(t, [][]any{{"t1", cs[1].ID, -0.5}}, f.rows("alice", "SELECT trace_id, chunk_id, score FROM step_labels"))
	require.Equal(t, [][]any{{"failure"}}, f.rows("alice", "SELECT trace_outcome FROM task_scores"))
	del := f.ev("alice", events.TraceDeleted, events.TraceDeletedV1{TraceID: "t1"})
	again := f.ev("alice", events.TraceImported, events.TraceImportedV1{TraceID: "t1", Title: "x", SourceFormat: "stash", Revision: 2, Steps: s})
	require.NoError(t, f.proj.Apply(ctx, []events.Envelope{del, again}))
	require.Empty(t, f.rows("alice", "SELECT * FROM step_labels"), "labels went with the deleted trace")
}
