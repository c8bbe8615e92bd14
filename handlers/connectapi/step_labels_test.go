package connectapi_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/labels"
	"github.com/criticml/critic/domain/traces"
	"github.com/criticml/critic/projections/readmodel"
	criticv1 "github.com/criticml/critic/schema/gen/critic/v1"
)

const plainRefund = `{"id":"r2","title":"Refund","steps":[{"role":"user","content":"Refund order 2"},` +
	`{"role":"assistant","content":"","tool_name":"lookup_order","tool_input":{"id":"2"},"tool_call_id":"k"},` +
	`{"role":"tool","content":"delivered","tool_call_id":"k"},{"role":"assistant","content":"Refunded."}]}`

const grownRefund = `{"id":"r2","title":"Refund","steps":[{"role":"user","content":"Refund order 2"},` +
	`{"role":"assistant","content":"","tool_name":"lookup_order","tool_input":{"id":"2"},"tool_call_id":"k"},` +
	`{"role":"tool","content":"delivered","tool_call_id":"k"},{"role":"assistant","content":"Refunded."},{"role":"user","content":"perfect, thanks"}]}`

func domainSteps(t *testing.T, d *readmodel.TraceDetail) []domain.Step {
	out := make([]domain.Step, len(d.Steps))
	for i, s := range d.Steps {
		st, err := readmodel.DomainStep(s)
		require.NoError(t, err)
		out[i] = st
	}
	return out
}

// TestModelLabelsAreEvents: labels a labeling model reports are recorded as
// trace.steps_labeled (checked against the trace's current chunks), scored
// on read like imported ones and in SQL, and survive a re-import that only
// grows the trace, so only the new chunk is left to label.
func TestModelLabelsAreEvents(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	c := e.client()
	imp, err := c.ImportTraces(ctx, withKey(e.alice, &criticv1.ImportTracesRequest{Format: "stash", Data: plainRefund}))
	require.NoError(t, err)
	id := imp.Msg.TraceIds[0]
	d, err := e.srv.Queries.GetTrace(ctx, e.aliceID, id)
	require.NoError(t, err)
	require.Nil(t, d.StepScores, "no labels yet")
	cs := labels.Chunks(domainSteps(t, d))
	require.Len(t, cs, 3)
	todo := labels.ToLabel(cs, nil)
	require.Len(t, todo, 3)

	f := false
	tr := true
	lb := []labels.Label{
		{ChunkID: cs[0].ID, TaskID: "t", Actor: labels.ActorUser, Intent: labels.IntentRequest, Verdict: labels.VerdictNone, Sentiment: labels.SentimentNeutral},
		{ChunkID: cs[1].ID, TaskID: "t", Actor: labels.ActorAgent, Type: labels.TypeToolCall, Effect: labels.EffectLookup, Result: labels.ResultOK,
			IsOutput: &f, Outcome: labels.OutcomeNone, Stance: labels.StanceNone, Coverage: labels.CoverageNone},
		{ChunkID: cs[2].ID, TaskID: "t", Actor: labels.ActorAgent, Type: labels.TypeAnswer, Effect: labels.EffectNone, Result: labels.ResultNone,
			IsOutput: &tr, Outcome: labels.OutcomeSolved, Stance: labels.StanceConfident, Coverage: labels.CoverageFull},
	}
	worker := commands.WorkerActor("labeler-1")
	in := traces.StepLabelsInput{TraceID: id, Revision: 1, Model: "openai/test-labeler", PromptVersion: "v1", Labels: lb}
	// A label for a chunk that is not in the trace records nothing.
	badIn := in
	badIn.Labels = append([]labels.Label{}, lb...)
	badIn.Labels[2].ChunkID = "ck_missing"
	_, err = e.srv.Cmds.RecordStepLabels.Handle(ctx, commands.RecordStepLabels{Actor: worker, Labels: badIn})
	var v *domain.ValidationError
	require.ErrorAs(t, err, &v)
	// Another user cannot label alice's trace.
	_, err = e.srv.Cmds.RecordStepLabels.Handle(ctx, commands.RecordStepLabels{Actor: commands.Actor{UserID: "00000000-0000-0000-0000-000000000001"}, Labels: in})
	var nf *domain.NotFoundError
	require.ErrorAs(t, err, &nf)

	res, err := e.srv.Cmds.RecordStepLabels.Handle(ctx, commands.RecordStepLabels{Actor: worker, Labels: in})
	require.NoError(t, err)
	require.NoError(t, e.srv.Waiter.Wait(ctx, res.LastEventID))
	d, err = e.srv.Queries.GetTrace(ctx, e.aliceID, id)
	require.NoError(t, err)
	require.NotNil(t, d.StepScores)
	require.Equal(t, "partial_success", d.StepScores.Outcome)
	require.InDelta(t, 0.22, *d.StepScores.TraceScore, 1e-9)

	// The snapshot behind /query follows.
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, err := e.srv.Snapshots.Query(ctx, e.aliceID, "SELECT count(*), sum(score) FROM step_labels WHERE actor = 'agent'")
		require.NoError(t, err)
		if r.Rows[0][0] == int64(2) {
			require.InDelta(t, 0.22, r.Rows[0][1].(float64), 1e-9)
			break
		}
		require.True(t, time.Now().Before(deadline), "snapshot never showed the labels: %v", r.Rows)
		time.Sleep(50 * time.Millisecond)
	}

	// A re-import that grows the trace keeps the labels of unchanged chunks;
	// only the new user message is left to label.
	_, err = c.ImportTraces(ctx, withKey(e.alice, &criticv1.ImportTracesRequest{Format: "stash", Data: grownRefund}))
	require.NoError(t, err)
	d, err = e.srv.Queries.GetTrace(ctx, e.aliceID, id)
	require.NoError(t, err)
	require.NotNil(t, d.StepScores, "unchanged chunks keep their labels")
	grown := labels.Chunks(domainSteps(t, d))
	have := map[string]bool{}
	for _, l := range lb {
		have[l.ChunkID] = true
	}
	left := labels.ToLabel(grown, have)
	require.Len(t, left, 1)
	require.Equal(t, labels.KindUserMessage, left[0].Kind)
	_, err = e.srv.Cmds.RecordStepLabels.Handle(ctx, commands.RecordStepLabels{Actor: worker, Labels: in})
	require.Error(t, err, "labels of the old revision are stale")
	thanks := labels.Label{ChunkID: left[0].ID, TaskID: "t", Actor: labels.ActorUser, Intent: labels.IntentFeedback,
		Verdict: labels.VerdictConfirmed, Sentiment: labels.SentimentPositive}
	res, err = e.srv.Cmds.RecordStepLabels.Handle(ctx, commands.RecordStepLabels{Actor: worker, Labels: traces.StepLabelsInput{TraceID: id, Revision: 2, Model: "openai/test-labeler", Labels: []labels.Label{thanks}}})
	require.NoError(t, err)
	require.NoError(t, e.srv.Waiter.Wait(ctx, res.LastEventID))
	d, err = e.srv.Queries.GetTrace(ctx, e.aliceID, id)
	require.NoError(t, err)
	require.Equal(t, "success", d.StepScores.Outcome)
	require.InDelta(t, 0.97, *d.StepScores.TraceScore, 1e-9, "confirmed +1 plus the lookup")
}
