package snapshot

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/platform/duck"
)

// TestReplicaFollowsEveryChange: an owner's query replica, once built,
// follows every kind of change the projection makes by copying just the
// touched rows — imports, revisions (appended and replaced, with labels and
// rescoring), titles, annotations added, edited, removed, scores, action
// scores, deletions — and after each event it equals what a brand-new copy
// of the owner's file holds (LoadCopy, a second snapshot directory fed the
// same events). It is built once: no change rebuilt it.
func TestReplicaFollowsEveryChange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	copySnaps, err := duck.New(t.TempDir(), duck.Options{Load: duck.LoadCopy, Prewarm: -1})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, copySnaps.Close()) })
	blobs, err := blob.NewLocal(t.TempDir())
	require.NoError(t, err)
	ref := &fixture{t: t, snaps: copySnaps, blobs: blobs, proj: New(copySnaps, blobs, nil)}

	s := steps("t5", "system", "user", "assistant", "tool", "assistant")
	s[1].Metadata = label(t, reqLabel)
	s[2].ToolName, s[2].ToolCallID, s[2].Metadata = "lookup_order", "k1", label(t, callLabel)
	s[3].ToolCallID = "k1"
	s[4].Metadata = label(t, answerLabel)
	h := f.history()
	// The first import builds the replica below; everything after it must
	// be followed.
	first, rest := h[:2], h[2:]
	rest = append(rest,
		f.ev("alice", events.TraceImported, events.TraceImportedV1{TraceID: "t5", Title: "Labeled", SourceFormat: "stash",
			Revision: 1, Steps: s, Metadata: map[string]any{"big": 12345678901234567, "z": 1, "a": []any{"x"}}}),
		f.ev("alice", events.TraceTitled, events.TraceTitledV1{TraceID: "t1", Title: "Refund for 1182"}),
		f.ev("alice", events.TracesScored, events.TracesScoredV1{ModelID: "m1", ModelName: "rm",
			Scores: []events.TraceScore{{TraceID: "t1", Revision: 1, Score: 0.5}, {TraceID: "t2", Revision: 2, Score: -1.25}}}),
		f.ev("alice", events.ActionsScored, events.ActionsScoredV1{ModelID: "m1", ModelName: "rm",
			Scores: []events.ActionScore{{TraceID: "t1", StepID: "t1-s2", Revision: 1, Score: 0.1, Credit: 0.2}}}),
		f.ev("alice", events.TracesScored, events.TracesScoredV1{ModelID: "m1", ModelName: "rm",
			Scores: []events.TraceScore{{TraceID: "t1", Revision: 1, Score: 0.75}}}),
		f.ev("alice", events.TraceRevised, events.TraceRevisedV1{TraceID: "t5", Revision: 2, Mode: events.RevisionAppended, Title: "Labeled",
			SourceFormat: "stash", Steps: []events.StepRecord{{ID: "t5-s5", Index: 5, Step: domain.Step{Role: "user", Content: "it worked",
				Metadata: label(t, thanksLabel)}}}}),
		f.ev("alice", events.AnnotationAdded, events.AnnotationAddedV1{AnnotationID: "a9", TraceID: "t5", StepID: "t5-s4",
			Rating: new(1), Comment: new("good"), AuthorID: "alice", AuthorName: "alice", TraceRevision: 2}),
		f.ev("alice", events.TraceRevised, events.TraceRevisedV1{TraceID: "t5", Revision: 3, Mode: events.RevisionReplaced, Title: "Labeled again",
			SourceFormat: "stash", Steps: []events.StepRecord{{ID: "new", Index: 0, Step: domain.Step{Role: "user", Content: "hi"}}, s[3], s[4]}}),
		f.ev("alice", events.AnnotationEdited, events.AnnotationEditedV1{AnnotationID: "a9", TraceID: "t5", Rating: new(-1)}),
		f.ev("alice", events.TraceDeleted, events.TraceDeletedV1{TraceID: "t1"}),
		f.ev("alice", events.AnnotationRemoved, events.AnnotationRemovedV1{AnnotationID: "a9", TraceID: "t5", Reason: events.RemovedByUser}),
	)
	require.NoError(t, f.proj.Apply(ctx, first))
	require.NoError(t, ref.proj.Apply(ctx, first))
	require.Equal(t, ref.dump("alice"), f.dump("alice"))
	builds := f.snaps.ReplicaBuilds()
	require.Positive(t, builds)
	for i, e := range rest {
		require.NoError(t, f.proj.Apply(ctx, []events.Envelope{e}))
		require.NoError(t, ref.proj.Apply(ctx, []events.Envelope{e}))
		require.Equal(t, ref.dump("alice"), f.dump("alice"), "after event %d (%s)", i, e.Type)
		require.Equal(t, ref.rows("alice", "SELECT metadata::VARCHAR FROM traces ORDER BY id"),
			f.rows("alice", "SELECT metadata::VARCHAR FROM traces ORDER BY id"), "JSON text kept byte for byte")
	}
	require.Equal(t, builds, f.snaps.ReplicaBuilds(), "every change was followed, none rebuilt the replica")
	require.Equal(t, ref.dump("bob"), f.dump("bob"))
}
