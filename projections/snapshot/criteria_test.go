package snapshot

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/platform/duck"
)

// TestCriteriaInSnapshot: criteria and their values reach SQL — the
// `criteria` table (archived ones too) and the annotations' criterion_id
// and value (a label rename renames stored values) — and an owner's query
// replica equals a fresh copy of the file after every such change (a
// criteria change is not trace-keyed, so the replica is rebuilt for it).
func TestCriteriaInSnapshot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	copySnaps, err := duck.New(t.TempDir(), duck.Options{Load: duck.LoadCopy, Prewarm: -1})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, copySnaps.Close()) })
	blobs, err := blob.NewLocal(t.TempDir())
	require.NoError(t, err)
	ref := &fixture{t: t, snaps: copySnaps, blobs: blobs, proj: New(copySnaps, blobs, nil)}

	h := f.history()
	labels := []events.CriterionLabel{{Name: "good", Score: 1}, {Name: "bad", Score: -1}}
	evs := append(h[:2],
		f.ev("alice", events.CriterionDefined, events.CriterionDefinedV1{CriterionID: "c1", Name: "Tone", Kind: "categorical",
			Labels: labels, AppliesTo: "assistant"}),
		f.ev("alice", events.CriterionDefined, events.CriterionDefinedV1{CriterionID: "c2", Name: "Tool choice", Kind: "scale",
			ScaleMax: 5, AppliesTo: "tool_call"}),
		f.ev("alice", events.AnnotationAdded, events.AnnotationAddedV1{AnnotationID: "v1", TraceID: "t1", StepID: "t1-s4",
			AuthorID: "alice", AuthorName: "alice", TraceRevision: 1, CriterionID: "c1", Value: json.RawMessage(`"bad"`)}),
		f.ev("alice", events.AnnotationAdded, events.AnnotationAddedV1{AnnotationID: "v2", TraceID: "t1", StepID: "t1-s2",
			AuthorID: "alice", AuthorName: "alice", TraceRevision: 1, CriterionID: "c2", Value: json.RawMessage(`4`)}),
		f.ev("alice", events.AnnotationEdited, events.AnnotationEditedV1{AnnotationID: "v2", TraceID: "t1", Value: json.RawMessage(`5`)}),
		f.ev("alice", events.CriterionChanged, events.CriterionChangedV1{CriterionID: "c1", Name: "Tone of voice",
			Labels: []events.CriterionLabel{{Name: "good", Score: 1}, {Name: "rude", Score: -1}, {Name: "meh"}}}),
		f.ev("alice", events.CriterionArchived, events.CriterionArchivedV1{CriterionID: "c2"}),
	)
	for i, e := range evs {
		require.NoError(t, f.proj.Apply(ctx, []events.Envelope{e}))
		require.NoError(t, ref.proj.Apply(ctx, []events.Envelope{e}))
		if i >= 1 {
			for _, table := range []string{"annotations", "criteria"} {
				require.Equal(t, ref.rows("alice", "SELECT * FROM "+table+" ORDER BY ALL"), f.rows("alice", "SELECT * FROM "+table+" ORDER BY ALL"),
					"%s after event %d (%s)", table, i, e.Type)
			}
		}
	}
	require.Equal(t, [][]any{{"c1", "rude"}, {"c2", "5"}},
		f.rows("alice", "SELECT criterion_id, value FROM annotations WHERE criterion_id IS NOT NULL ORDER BY 1"))
	require.Equal(t, [][]any{
		{"Tone of voice", "categorical", "assistant", nil, `[{"name":"good","score":1},{"name":"rude","score":-1},{"name":"meh","score":0}]`, false},
		{"Tool choice", "scale", "tool_call", int32(5), `[]`, true},
	}, f.rows("alice", "SELECT name, kind, applies_to, scale_max, labels::VARCHAR, archived FROM criteria ORDER BY name"))
}
