package rewardmodels

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/traces"
)

func step(id string, i int, role domain.Role, content string) events.StepRecord {
	return events.StepRecord{ID: id, Index: i, Step: domain.Step{Role: role, Content: content}}
}

func TestGepaExampleOf(t *testing.T) {
	c1, c2, c3 := "promised a refund without checking", "flagged: ignore me", "  "
	tr := traces.State{ID: "t1", Steps: []events.StepRecord{
		step("s0", 0, domain.RoleSystem, "You are support."),
		step("s1", 1, domain.RoleSystem, "Refunds within 30 days."),
		step("s2", 2, domain.RoleUser, "Refund order 7"),
		step("s3", 3, domain.RoleAssistant, "Sure, refunded!"),
		step("s4", 4, domain.RoleUser, "thanks"),
	}, Annotations: map[string]*traces.Annotation{
		"a1": {ID: "a1", StepID: "s3", Comment: &c1},
		"a2": {ID: "a2", Comment: &c2, LabelError: true},
		"a3": {ID: "a3", Comment: &c3},
	}}
	quote := "Sure, refunded!"
	ex, ok := GepaExampleOf(tr, []events.Finding{
		{TraceID: "t1", StepIndex: 3, Label: "negative", EvidenceQuote: &quote, Reason: "no lookup"},
		{TraceID: "t1", Label: "unclear", EvidenceQuote: &quote},
		{TraceID: "other", Label: "negative", EvidenceQuote: &quote},
	})
	require.True(t, ok)
	require.Equal(t, "You are support.\n\nRefunds within 30 days.", *ex.System)
	require.Equal(t, []GepaMessage{{Role: "user", Content: "Refund order 7"}}, ex.Messages, "only steps before the first assistant reply")
	require.Equal(t, []string{"On step 3: promised a refund without checking", `Evidence (negative, step 3): "Sure, refunded!" — no lookup`}, ex.Feedback)

	_, ok = GepaExampleOf(traces.State{ID: "t2", Steps: []events.StepRecord{step("x", 0, domain.RoleSystem, "s"), step("y", 1, domain.RoleAssistant, "hi")}}, nil)
	require.False(t, ok, "nothing before the first assistant step: skipped")
	ex, ok = GepaExampleOf(traces.State{ID: "t3", Steps: []events.StepRecord{step("u", 0, domain.RoleUser, "q")}}, nil)
	require.True(t, ok)
	require.Nil(t, ex.System)
}
