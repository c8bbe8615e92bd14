package traces

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/labels"
)

func TestDecideStepLabels(t *testing.T) {
	t.Parallel()
	st := stored(t, "refund please", "Refunded.", "thanks")
	all := make([]domain.Step, len(st.Steps))
	for i, r := range st.Steps {
		all[i] = r.Step
	}
	cs := labels.Chunks(all)
	user := labels.Label{ChunkID: cs[2].ID, TaskID: "t", Actor: labels.ActorUser, Intent: labels.IntentFeedback,
		Verdict: labels.VerdictConfirmed, VerdictTarget: new(cs[1].ID), Sentiment: labels.SentimentPositive}
	answer := labels.Label{ChunkID: cs[1].ID, TaskID: "t", Actor: labels.ActorAgent, Type: labels.TypeAnswer, Effect: labels.EffectNone,
		Result: labels.ResultNone, IsOutput: new(true), Outcome: labels.OutcomeSolved, Stance: labels.StanceConfident, Coverage: labels.CoverageFull}
	in := StepLabelsInput{TraceID: "t1", Revision: st.Revision, Model: "openai/m", PromptVersion: "p1", Labels: []labels.Label{user}}
	ev, err := DecideStepLabels(st, in)
	require.NoError(t, err, "a reference to an unlabeled chunk of the trace is fine")
	require.Equal(t, labels.SchemaVersion, ev.SchemaVersion)
	require.Equal(t, "openai/m", ev.Model)
	require.Len(t, ev.Labels, 1)

	bad := func(edit func(*StepLabelsInput)) error {
		c := in
		c.Labels = append([]labels.Label{}, in.Labels...)
		edit(&c)
		_, err := DecideStepLabels(st, c)
		return err
	}
	var conflict *domain.ConflictError
	require.ErrorAs(t, bad(func(c *StepLabelsInput) { c.Revision++ }), &conflict)
	require.Equal(t, "stale_revision", conflict.Code)
	for name, c := range map[string]struct {
		edit  func(*StepLabelsInput)
		field string
	}{
		"no labels":     {func(c *StepLabelsInput) { c.Labels = nil }, "labels"},
		"no model":      {func(c *StepLabelsInput) { c.Model = "" }, "model"},
		"unknown chunk": {func(c *StepLabelsInput) { c.Labels[0].ChunkID = "ck_nope" }, "labels[0].chunk_id"},
		"twice":         {func(c *StepLabelsInput) { c.Labels = append(c.Labels, user) }, "labels[1].chunk_id"},
		"wrong actor":   {func(c *StepLabelsInput) { c.Labels = []labels.Label{answer}; c.Labels[0].ChunkID = cs[0].ID }, "labels[0].actor"},
		"bad value":     {func(c *StepLabelsInput) { c.Labels[0].Verdict = "meh" }, "labels[0].verdict"},
		"bad target":    {func(c *StepLabelsInput) { c.Labels[0].VerdictTarget = new(cs[0].ID) }, "labels[0].verdict_target"},
	} {
		var v *domain.ValidationError
		require.ErrorAs(t, bad(c.edit), &v, name)
		require.Equal(t, c.field, v.Field, name)
	}
	gone := st
	gone.Exists = false
	_, err = DecideStepLabels(gone, in)
	var nf *domain.NotFoundError
	require.ErrorAs(t, err, &nf)
}

// A rescore (a relabel request) makes every recorded label count as missing
// for the labeler until a new label of its chunk supersedes it; the labels
// themselves stay for scoring in between.
func TestRelabelMarksRecordedLabelsStale(t *testing.T) {
	t.Parallel()
	var st State
	apply := func(typ string, p any) {
		raw, err := json.Marshal(p)
		require.NoError(t, err)
		require.NoError(t, st.Apply(events.Envelope{Type: typ, Version: st.Version + 1, Payload: raw}))
	}
	a := labels.Label{ChunkID: "a", Actor: labels.ActorUser}
	b := labels.Label{ChunkID: "b", Actor: labels.ActorAgent}
	apply(events.TraceStepsLabeled, events.TraceStepsLabeledV1{TraceID: "t1", Labels: []labels.Label{a, b}})
	require.Equal(t, map[string]bool{"a": true, "b": true}, st.CurrentLabels())

	apply(events.TraceLabelingRequested, events.TraceLabelingRequestedV1{TraceID: "t1"})
	require.Equal(t, map[string]bool{"a": true, "b": true}, st.CurrentLabels(), "a retry keeps what is labeled")

	apply(events.TraceLabelingRequested, events.TraceLabelingRequestedV1{TraceID: "t1", Relabel: true})
	require.Empty(t, st.CurrentLabels(), "a rescore asks for every chunk")
	require.Len(t, st.StepLabels, 2, "the old labels still score the trace")

	a.Intent = labels.IntentFollowUp
	apply(events.TraceStepsLabeled, events.TraceStepsLabeledV1{TraceID: "t1", Labels: []labels.Label{a}})
	require.Equal(t, map[string]bool{"a": true}, st.CurrentLabels())
	require.Equal(t, labels.IntentFollowUp, st.StepLabels["a"].Intent)
}
