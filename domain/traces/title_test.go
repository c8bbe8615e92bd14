package traces_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/traces"
)

func TestAGrowingSessionKeepsItsGeneratedTitle(t *testing.T) {
	t.Parallel()
	n := 0
	newID := func() string { n++; return fmt.Sprintf("s%d", n) }
	steps := []domain.Step{{Role: domain.RoleUser, Content: "Fix the flaky test"}, {Role: domain.RoleAssistant, Content: "Looking."}}
	var s traces.State
	d, err := traces.DecideImport(s, traces.ImportInput{TraceID: "t", Format: "claude_code", NewID: newID, Trace: domain.Trace{Steps: steps, SessionSync: true}})
	require.NoError(t, err)
	imp := d.Payload.(events.TraceImportedV1)
	require.True(t, imp.TitleDerived)
	require.Equal(t, "Fix the flaky test", imp.Title)
	s.Apply(envelope(t, events.TraceImported, imp, 1))
	s.Apply(envelope(t, events.TraceTitled, events.TraceTitledV1{TraceID: "t", Revision: 1, Title: "Stabilize flaky test"}, 2))
	require.True(t, s.Generated)

	grown := append(append([]domain.Step(nil), steps...), domain.Step{Role: domain.RoleUser, Content: "more"})
	d, err = traces.DecideImport(s, traces.ImportInput{TraceID: "t", Format: "claude_code", NewID: newID, Trace: domain.Trace{Steps: grown, SessionSync: true}})
	require.NoError(t, err)
	rev := d.Payload.(events.TraceRevisedV1)
	require.Equal(t, "Stabilize flaky test", rev.Title)
	require.False(t, rev.TitleDerived, "no new title job for a growing session")

	// A replacement derives a title again.
	changed := append([]domain.Step{{Role: domain.RoleUser, Content: "Fix the other test"}}, grown[1:]...)
	d, err = traces.DecideImport(s, traces.ImportInput{TraceID: "t", Format: "stash", NewID: newID, Trace: domain.Trace{Steps: changed}})
	require.NoError(t, err)
	require.True(t, d.Payload.(events.TraceRevisedV1).TitleDerived)
}

func envelope(t *testing.T, typ string, payload any, version int64) events.Envelope {
	raw, err := json.Marshal(payload)
	require.NoError(t, err)
	return events.Envelope{Type: typ, Version: version, OwnerID: "o", Payload: raw}
}
