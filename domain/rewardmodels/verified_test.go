package rewardmodels

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/labels"
	"github.com/criticml/critic/domain/traces"
)

func label(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(s), &m))
	return map[string]any{"label": m}
}

// rollout is one attempt at a prompt: the user's request, a lookup both
// attempts make, then the attempt's own answer, with metadata (an explicit
// outcome) and the user's reaction's label when given.
func rollout(t *testing.T, id, prompt, answer string, meta map[string]any, verdict string) traces.State {
	steps := []domain.Step{
		{Role: domain.RoleSystem, Content: "be brief"},
		{Role: domain.RoleUser, Content: prompt},
		{Role: domain.RoleAssistant, ToolName: "lookup", ToolInput: map[string]any{"q": prompt}, ToolCallID: "k1"},
		{Role: domain.RoleTool, Content: "found", ToolCallID: "k1"},
		{Role: domain.RoleAssistant, Content: answer},
	}
	if verdict != "" {
		steps[1].Metadata = label(t, `{"chunk_id":"c1","task_id":"t1","actor":"user","intent":"request","verdict":"none","verdict_target":null,"sentiment":"neutral","evidence":"","note":""}`)
		steps[2].Metadata = label(t, `{"chunk_id":"c2","task_id":"t1","actor":"agent","type":"tool_call","effect":"lookup","result":"ok","duplicate_of":null,"is_output":false,"outcome":"none","stance":"none","coverage":"none","evidence":"","note":""}`)
		steps[4].Metadata = label(t, `{"chunk_id":"c3","task_id":"t1","actor":"agent","type":"answer","effect":"none","result":"none","duplicate_of":null,"is_output":true,"outcome":"solved","stance":"confident","coverage":"full","evidence":"","note":""}`)
		steps = append(steps, domain.Step{Role: domain.RoleUser, Content: "reaction", Metadata: label(t,
			`{"chunk_id":"c4","task_id":"t1","actor":"user","intent":"feedback","verdict":"`+verdict+`","verdict_target":"c3","sentiment":"neutral","evidence":"reaction","note":""}`)})
	}
	s := traces.State{ID: id, OwnerID: "alice", Exists: true, Revision: 1, Metadata: meta, SourceFormat: "stash"}
	for i, st := range steps {
		s.Steps = append(s.Steps, events.StepRecord{ID: id + "-s" + string(rune('0'+i)), Index: i, Step: st})
	}
	return s
}

func TestVerifiedOutcome(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name          string
		s             traces.State
		outcome, from string
		ok            bool
	}{
		{"explicit success", rollout(t, "a", "p", "x", map[string]any{"outcome": "success"}, ""), "success", OutcomeFromImport, true},
		{"explicit failure, any case", rollout(t, "b", "p", "x", map[string]any{"outcome": " Failure "}, ""), "failure", OutcomeFromImport, true},
		{"explicit beats the labels", rollout(t, "c", "p", "x", map[string]any{"outcome": "failure"}, "confirmed"), "failure", OutcomeFromImport, true},
		{"the user confirmed the answer", rollout(t, "d", "p", "x", nil, "confirmed"), "success", OutcomeFromStepLabels, true},
		{"the user rejected it", rollout(t, "e", "p", "x", nil, "rejected_confident"), "failure", OutcomeFromStepLabels, true},
		{"nobody reacted: partial, not verified", rollout(t, "f", "p", "x", nil, "none"), "", "", false},
		{"another outcome word", rollout(t, "g", "p", "x", map[string]any{"outcome": "partial"}, ""), "", "", false},
		{"no labels, no outcome", rollout(t, "h", "p", "x", nil, ""), "", "", false},
	} {
		o, from, ok := VerifiedOutcome(c.s)
		require.Equal(t, c.ok, ok, c.name)
		require.Equal(t, c.outcome, o, c.name)
		require.Equal(t, c.from, from, c.name)
	}
}

// Rollouts of one prompt pair where they first differ, succeeded over
// failed; unverified attempts and other prompts pair with nothing.
func TestVerifiedComparisons(t *testing.T) {
	t.Parallel()
	win := rollout(t, "r1", "sort 3 1 2", "1 2 3", map[string]any{"outcome": "success"}, "")
	lose := rollout(t, "r2", "sort 3 1 2", "3 2 1", map[string]any{"outcome": "failure"}, "")
	rejected := rollout(t, "r3", "sort 3 1 2", "2 1 3", nil, "rejected")
	same := rollout(t, "r4", "sort 3 1 2", "1 2 3", map[string]any{"outcome": "failure"}, "") // same action as r1: no pair
	open := rollout(t, "r5", "sort 3 1 2", "3 1 2", nil, "")
	other := rollout(t, "r6", "sort b a", "b a", map[string]any{"outcome": "failure"}, "")
	deleted := rollout(t, "r7", "sort 3 1 2", "nope", map[string]any{"outcome": "failure"}, "")
	deleted.Exists = false

	got := VerifiedComparisons([]traces.State{other, rejected, open, lose, deleted, win, same})
	require.Len(t, got, 2)
	require.Equal(t, "verified:r1/r1-s4:r2/r2-s4", got[0].ID)
	require.Equal(t, "verified:r1/r1-s4:r3/r3-s4", got[1].ID)
	ctx := got[0].Context
	require.Contains(t, ctx, "user: sort 3 1 2")
	require.NotContains(t, ctx, "be brief", "system steps are not rendered")
	require.Equal(t, ctx+"\nassistant: 1 2 3", got[0].ChosenText)
	require.Equal(t, ctx+"\nassistant: 3 2 1", got[0].RejectedText)
	require.Equal(t, []string{OutcomeFromImport, OutcomeFromImport}, []string{got[0].ChosenFrom, got[0].RejectedFrom})
	require.Equal(t, OutcomeFromStepLabels, got[1].RejectedFrom)

	// As personal-model pairs: the provenance says verified outcome.
	pairs := VerifiedPairs([]traces.State{win, lose}, 1)
	require.Len(t, pairs, 1)
	p := pairs[0]
	require.Equal(t, SourceVerifiedOutcome, p.Source)
	require.Equal(t, []string{"r1", "r2"}, p.TraceIDs)
	require.Equal(t, map[string]int{"r1": 1, "r2": 1}, p.TraceRevisions)
	require.Equal(t, &VerifiedProvenance{Comparison: "verified:r1/r1-s4:r2/r2-s4", ChosenOutcomeFrom: OutcomeFromImport, RejectedOutcomeFrom: OutcomeFromImport}, p.Verified)
	require.Equal(t, domain.ActionResponse, *p.ActionType)
	v3 := VerifiedPairs([]traces.State{win, lose}, 3)[0]
	require.Equal(t, domain.V3Sections(ctx, "assistant: 1 2 3"), v3.Chosen)
}

// A personal model trained on two verified rollouts has a pair from them
// (annotation source feedback), and none when only explicit ratings count.
func TestDatasetHoldsVerifiedOutcomePairs(t *testing.T) {
	t.Parallel()
	win := rollout(t, "r1", "sort 3 1 2", "1 2 3", map[string]any{"outcome": "success"}, "")
	lose := rollout(t, "r2", "sort 3 1 2", "3 2 1", map[string]any{"outcome": "failure"}, "")
	lose2 := rollout(t, "r3", "sort 3 1 2", "2 1 3", map[string]any{"outcome": "failure"}, "")
	sel := []traces.State{win, lose, lose2}
	ds, err := BuildDatasetFrom(DatasetInputs{ModelID: "m", Attempt: 1, Selected: sel, All: sel,
		Config: events.TrainingConfig{AnnotationSource: events.SourceFeedback, InputVersion: 1}})
	require.NoError(t, err)
	require.Len(t, ds.Pairs, 2)
	for _, p := range ds.Pairs {
		require.Equal(t, SourceVerifiedOutcome, p.Source)
	}
	require.Equal(t, 3, ds.SourceTraces)
	_, err = BuildDatasetFrom(DatasetInputs{ModelID: "m", Attempt: 1, Selected: sel, All: sel,
		Config: events.TrainingConfig{AnnotationSource: events.SourceExplicit, InputVersion: 1}})
	var few *TooFewPairsError
	require.ErrorAs(t, err, &few)
}

// The outcome from labels a labeling model recorded (trace.steps_labeled,
// not imported with the trace): the user rejected the answer, so the trace
// failed and pairs under a succeeded rollout of the same prompt.
func TestVerifiedOutcomeFromRecordedStepLabels(t *testing.T) {
	t.Parallel()
	s := rollout(t, "l1", "sort 3 1 2", "3 2 1", nil, "")
	s.Steps = append(s.Steps, events.StepRecord{ID: "l1-s5", Index: 5, Step: domain.Step{Role: domain.RoleUser, Content: "No, wrong."}})
	steps := make([]domain.Step, len(s.Steps))
	for i, st := range s.Steps {
		steps[i] = st.Step
	}
	chunks := labels.Chunks(steps)
	require.Len(t, chunks, 4) // request, lookup with its result, answer, reaction
	no, yes := false, true
	answer := chunks[2].ID
	recorded := []labels.Label{
		{ChunkID: chunks[0].ID, TaskID: "t1", Actor: labels.ActorUser, Intent: labels.IntentRequest, Verdict: labels.VerdictNone, Sentiment: labels.SentimentNeutral},
		{ChunkID: chunks[1].ID, TaskID: "t1", Actor: labels.ActorAgent, Type: labels.TypeToolCall, Effect: labels.EffectLookup, Result: labels.ResultOK,
			IsOutput: &no, Outcome: labels.OutcomeNone, Stance: labels.StanceNone, Coverage: labels.CoverageNone},
		{ChunkID: answer, TaskID: "t1", Actor: labels.ActorAgent, Type: labels.TypeAnswer, Effect: labels.EffectNone, Result: labels.ResultNone,
			IsOutput: &yes, Outcome: labels.OutcomeSolved, Stance: labels.StanceConfident, Coverage: labels.CoverageFull},
		{ChunkID: chunks[3].ID, TaskID: "t1", Actor: labels.ActorUser, Intent: labels.IntentFeedback, Verdict: labels.VerdictRejected,
			VerdictTarget: &answer, Sentiment: labels.SentimentNegative},
	}
	_, _, ok := VerifiedOutcome(s)
	require.False(t, ok, "unlabeled")
	raw, err := json.Marshal(events.TraceStepsLabeledV1{TraceID: "l1", Revision: 1, Model: "openai/labeler", Labels: recorded})
	require.NoError(t, err)
	require.NoError(t, s.Apply(events.Envelope{Type: events.TraceStepsLabeled, Version: 2, OwnerID: "alice", Payload: raw}))
	o, from, ok := VerifiedOutcome(s)
	require.True(t, ok)
	require.Equal(t, []string{OutcomeFailure, OutcomeFromStepLabels}, []string{o, from})

	win := rollout(t, "w1", "sort 3 1 2", "1 2 3", map[string]any{"outcome": "success"}, "")
	got := VerifiedComparisons([]traces.State{s, win})
	require.Len(t, got, 1)
	require.Equal(t, "w1", got[0].ChosenTrace.ID)
	require.Equal(t, OutcomeFromStepLabels, got[0].RejectedFrom)
}
