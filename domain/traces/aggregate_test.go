package traces

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
)

func steps(contents ...string) []domain.Step {
	out := make([]domain.Step, len(contents))
	for i, c := range contents {
		role := domain.RoleUser
		if i%2 == 1 {
			role = domain.RoleAssistant
		}
		out[i] = domain.Step{Role: role, Content: c}
	}
	return out
}

// stored returns the state after importing contents, with step ids s0, s1, …
func stored(t *testing.T, contents ...string) State {
	n := 0
	d, err := DecideImport(State{ID: "t1"}, ImportInput{TraceID: "t1", Format: "claude_code",
		Trace: domain.Trace{ExternalID: "sess", Steps: steps(contents...), SessionSync: true},
		NewID: func() string { n++; return fmt.Sprintf("s%d", n-1) }})
	require.NoError(t, err)
	st := State{ID: "t1"}
	raw, _ := json.Marshal(d.Payload)
	st.Apply(events.Envelope{Type: d.Type, Version: 1, OwnerID: "o", Payload: raw})
	return st
}

func TestSessionSync(t *testing.T) {
	base := stored(t, "a", "b", "c")
	newID := func() string { return "new" }
	cases := []struct {
		name     string
		snapshot []string
		want     string // "append", "noop", "sync_error"
	}{
		{"growing snapshot appends", []string{"a", "b", "c", "d", "e"}, "append"},
		{"duplicate snapshot is a no-op", []string{"a", "b", "c"}, "noop"},
		{"older snapshot is a no-op", []string{"a", "b"}, "noop"},
		{"divergent snapshot fails", []string{"a", "X", "c", "d"}, "sync_error"},
		{"divergent shorter snapshot fails", []string{"a", "X"}, "sync_error"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := DecideImport(base, ImportInput{TraceID: "t1", Format: "claude_code", NewID: newID,
				Trace: domain.Trace{ExternalID: "sess", Steps: steps(c.snapshot...), SessionSync: true}})
			switch c.want {
			case "sync_error":
				var se *domain.SyncError
				require.ErrorAs(t, err, &se)
				require.Contains(t, se.Error(), "trace_sync_error")
			case "noop":
				require.NoError(t, err)
				require.True(t, d.NoOp)
			case "append":
				require.NoError(t, err)
				p := d.Payload.(events.TraceRevisedV1)
				require.Equal(t, events.RevisionAppended, p.Mode)
				require.Equal(t, 2, p.Revision)
				require.Len(t, p.Steps, 2)
				require.Equal(t, 3, p.Steps[0].Index)
				require.Empty(t, p.RemovedStepIDs, "existing step ids are kept")
				st := base
				raw, _ := json.Marshal(p)
				st.Apply(events.Envelope{Type: d.Type, Version: 2, Payload: raw})
				require.Equal(t, []string{"s0", "s1", "s2", "new", "new"}, []string{st.Steps[0].ID, st.Steps[1].ID, st.Steps[2].ID, st.Steps[3].ID, st.Steps[4].ID})
			}
		})
	}
}

func TestReimportReplacesAndRemovesStepAnnotations(t *testing.T) {
	st := stored(t, "a", "b")
	one := 1
	for _, a := range []events.AnnotationAddedV1{
		{AnnotationID: "ann-step", TraceID: "t1", StepID: "s1", Rating: &one},
		{AnnotationID: "ann-trace", TraceID: "t1", Rating: &one},
	} {
		raw, _ := json.Marshal(a)
		st.Apply(events.Envelope{Type: events.AnnotationAdded, Version: st.Version + 1, Payload: raw})
	}
	d, err := DecideImport(st, ImportInput{TraceID: "t1", Format: "stash", NewID: func() string { return "n" },
		Trace: domain.Trace{ExternalID: "x", Steps: steps("a", "b2")}})
	require.NoError(t, err)
	p := d.Payload.(events.TraceRevisedV1)
	require.Equal(t, events.RevisionReplaced, p.Mode)
	require.Equal(t, []string{"s1"}, p.RemovedStepIDs, "only the changed step goes")
	require.Equal(t, []string{"s0", "n"}, []string{p.Steps[0].ID, p.Steps[1].ID}, "the unchanged step keeps its id")
	require.Equal(t, []events.AnnotationRemovedV1{{AnnotationID: "ann-step", TraceID: "t1", Reason: events.RemovedStepRemoved}}, d.Removals)
}

// TestReimportKeepsWhatDidNotChange: a file imported again is a no-op, and
// a revision removes only the annotations on steps whose content or
// position changed.
func TestReimportKeepsWhatDidNotChange(t *testing.T) {
	st := stored(t, "a", "b", "c", "d")
	one := 1
	for i, step := range []string{"s0", "s1", "s2", "s3", ""} {
		raw, _ := json.Marshal(events.AnnotationAddedV1{AnnotationID: fmt.Sprintf("ann%d", i), TraceID: "t1", StepID: step, Rating: &one})
		require.NoError(t, st.Apply(events.Envelope{Type: events.AnnotationAdded, Version: st.Version + 1, Payload: raw}))
	}
	n := 0
	decide := func(tr domain.Trace) Decision {
		tr.ExternalID = "x"
		d, err := DecideImport(st, ImportInput{TraceID: "t1", Format: "stash", NewID: func() string { n++; return fmt.Sprintf("n%d", n) }, Trace: tr})
		require.NoError(t, err)
		return d
	}
	require.True(t, decide(domain.Trace{Steps: steps("a", "b", "c", "d")}).NoOp, "the same content again")

	withInput := stored(t, "a")
	withInput.Steps[0].ToolInput = map[string]any{"n": json.Number("1.0")}
	d, err := DecideImport(withInput, ImportInput{TraceID: "t1", Format: "stash", NewID: func() string { return "z" },
		Trace: domain.Trace{ExternalID: "x", Steps: []domain.Step{{Role: domain.RoleUser, Content: "a", ToolInput: map[string]any{"n": 1.0}}}}})
	require.NoError(t, err)
	require.True(t, d.NoOp, "a tool input read back from the log says the same as the parsed one")

	p := decide(domain.Trace{Steps: steps("a", "B", "c", "d", "e")}).Payload.(events.TraceRevisedV1)
	require.Equal(t, events.RevisionReplaced, p.Mode)
	ids := []string{}
	for _, r := range p.Steps {
		ids = append(ids, r.ID)
	}
	require.Equal(t, []string{"s0", "n1", "s2", "s3", "n2"}, ids)
	require.Equal(t, []string{"s1"}, p.RemovedStepIDs)

	d = decide(domain.Trace{Steps: steps("a", "b")})
	require.Equal(t, []string{"s2", "s3"}, d.Payload.(events.TraceRevisedV1).RemovedStepIDs, "a shorter trace drops its tail")
	require.Equal(t, []string{"ann2", "ann3"}, []string{d.Removals[0].AnnotationID, d.Removals[1].AnnotationID})

	meta := steps("a", "b", "c", "d")
	meta[1].Metadata = map[string]any{"model": "m"}
	d = decide(domain.Trace{Steps: meta})
	p = d.Payload.(events.TraceRevisedV1)
	require.Empty(t, p.RemovedStepIDs, "new step metadata keeps every step")
	require.Empty(t, d.Removals)
	require.Equal(t, "m", p.Steps[1].Metadata["model"])

	d = decide(domain.Trace{Steps: steps("a", "b", "c", "d"), Title: "Named"})
	require.Equal(t, events.RevisionAppended, d.Payload.(events.TraceRevisedV1).Mode, "a new title alone keeps every step")
	require.Empty(t, d.Removals)
}

func TestExplicitSourceIDSurvivesUpsert(t *testing.T) {
	d, err := DecideImport(State{ID: "t"}, ImportInput{TraceID: "t", Format: "stash", ExplicitSourceID: "prod-bot", NewID: func() string { return "i" },
		Trace: domain.Trace{Steps: steps("a"), Metadata: map[string]any{"agent": "x"}}})
	require.NoError(t, err)
	p := d.Payload.(events.TraceImportedV1)
	require.Equal(t, "prod-bot", p.SourceID)
	require.Equal(t, "prod-bot", p.Metadata["source_id"], "exports keep it in metadata")
	st := State{ID: "t"}
	raw, _ := json.Marshal(p)
	st.Apply(events.Envelope{Type: d.Type, Version: 1, Payload: raw})
	d, err = DecideImport(st, ImportInput{TraceID: "t", Format: "stash", NewID: func() string { return "j" }, Trace: domain.Trace{Steps: steps("a", "b")}})
	require.NoError(t, err)
	require.Equal(t, "prod-bot", d.Payload.(events.TraceRevisedV1).SourceID)
}

func TestAnnotationRules(t *testing.T) {
	st := stored(t, "a", "the answer is 42")
	st.Steps[0].Role = domain.RoleSystem
	one, two := 1, 2
	c := "why"
	_, err := DecideAddAnnotation(st, AddAnnotationInput{StepID: "s1", Comment: &c, Quote: &events.Quote{Text: "answer", Prefix: "the ", Suffix: " is"}})
	require.NoError(t, err)
	_, err = DecideAddAnnotation(st, AddAnnotationInput{StepID: "s0", Rating: &one})
	require.ErrorContains(t, err, "not ratings")
	_, err = DecideAddAnnotation(st, AddAnnotationInput{StepID: "s0", Comment: &c})
	require.NoError(t, err, "system steps take comments")
	_, err = DecideAddAnnotation(st, AddAnnotationInput{Rating: &two})
	require.ErrorContains(t, err, "1, -1 or null")
	_, err = DecideAddAnnotation(State{ID: "gone"}, AddAnnotationInput{Rating: &one})
	var nf *domain.NotFoundError
	require.ErrorAs(t, err, &nf)
}

func TestLiveTraceResendIsANoOpAndGrowthAppends(t *testing.T) {
	base := stored(t, "a", "b")
	newID := func() string { return "new" }
	decide := func(contents ...string) Decision {
		d, err := DecideImport(base, ImportInput{TraceID: "t1", Format: "claude_code", NewID: newID,
			Trace: domain.Trace{ExternalID: "sess", Steps: steps(contents...)}})
		require.NoError(t, err)
		return d
	}
	require.True(t, decide("a", "b").NoOp, "the same trace re-sent")
	p := decide("a", "b", "c").Payload.(events.TraceRevisedV1)
	require.Equal(t, events.RevisionAppended, p.Mode)
	require.Len(t, p.Steps, 1)
	require.Equal(t, 2, p.Steps[0].Index)
	p = decide("a", "X").Payload.(events.TraceRevisedV1)
	require.Equal(t, events.RevisionReplaced, p.Mode, "a changed earlier step replaces")
	require.Equal(t, []string{"s1"}, p.RemovedStepIDs, "only the changed step")
	p = decide("a").Payload.(events.TraceRevisedV1)
	require.Equal(t, events.RevisionReplaced, p.Mode, "a shorter trace is a change, not a re-send")
}

// TestUnreadableEventStopsTheFold: the command side meets a payload that
// does not decode as the read model does, as an error naming the event,
// instead of deciding on a state that silently misses it.
func TestUnreadableEventStopsTheFold(t *testing.T) {
	good := stored(t, "a")
	raw, _ := json.Marshal(events.TraceImportedV1{TraceID: "t1", Revision: 1})
	_, err := Fold("t1", []events.Envelope{
		{ID: "e1", Stream: "trace/t1", Type: events.TraceImported, Version: 1, Payload: raw},
		{ID: "e2", Stream: "trace/t1", Type: events.AnnotationAdded, Version: 2, Payload: json.RawMessage(`{"annotation_id": 7}`)},
	})
	var ue *events.UnreadableError
	require.ErrorAs(t, err, &ue)
	require.Equal(t, "e2", ue.EventID)
	require.Contains(t, err.Error(), "event e2 (annotation.added.v1) of trace/t1 cannot be read")
	require.True(t, good.Exists)
}
