package snapshot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/platform/duck"
)

var t0 = time.Date(2026, 9, 29, 3, 12, 0, 0, time.UTC)

type fixture struct {
	t     testing.TB
	snaps *duck.Snapshots
	blobs *blob.Local
	proj  *Projection
	seq   int64
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	snaps, err := duck.New(t.TempDir(), duck.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, snaps.Close()) })
	blobs, err := blob.NewLocal(t.TempDir())
	require.NoError(t, err)
	return &fixture{t: t, snaps: snaps, blobs: blobs, proj: New(snaps, blobs, nil)}
}

// ev builds a stored envelope as the relay would deliver it.
func (f *fixture) ev(owner, typ string, payload any) events.Envelope {
	f.seq++
	raw, err := json.Marshal(payload)
	require.NoError(f.t, err)
	return events.Envelope{Seq: f.seq, ID: fmt.Sprintf("00000000-0000-0000-0000-%012d", f.seq), Stream: "trace/x",
		OwnerID: owner, Type: typ, RecordedAt: t0.Add(time.Duration(f.seq) * time.Second), Payload: raw}
}

func (f *fixture) rows(owner, sql string) [][]any {
	f.t.Helper()
	res, err := f.snaps.Query(context.Background(), owner, sql)
	require.NoError(f.t, err, sql)
	return res.Rows
}

// dump renders every user table of owner, ordered, for equality checks.
func (f *fixture) dump(owner string) map[string][][]any {
	out := map[string][][]any{}
	for _, t := range []string{"traces", "steps", "annotations", "scores", "action_scores", "step_labels", "task_scores"} {
		out[t] = f.rows(owner, "SELECT * FROM "+t+" ORDER BY ALL")
	}
	return out
}

func steps(traceID string, roles ...string) []events.StepRecord {
	out := make([]events.StepRecord, len(roles))
	for i, r := range roles {
		out[i] = events.StepRecord{ID: fmt.Sprintf("%s-s%d", traceID, i), Index: i,
			Step: domain.Step{Role: domain.Role(r), Content: fmt.Sprintf("%s step %d", traceID, i)}}
	}
	return out
}

// history is a realistic log of two owners plus events the snapshot ignores.
func (f *fixture) history() []events.Envelope {
	s := steps("t1", "system", "user", "assistant", "tool", "assistant")
	s[2].ToolName, s[2].ToolInput, s[2].ToolCallID = "lookup_order", map[string]any{"order_id": json.Number("1182")}, "call_1"
	return []events.Envelope{
		f.ev("alice", events.UserCreated, events.UserCreatedV1{UserID: "alice", Name: "alice"}),
		f.ev("alice", events.TraceImported, events.TraceImportedV1{TraceID: "t1", ExternalID: "refund-1182", Title: "Refund",
			SourceFormat: "stash", Metadata: map[string]any{"agent": "support-bot"}, Revision: 1, Steps: s}),
		f.ev("alice", events.TraceImported, events.TraceImportedV1{TraceID: "t2", Title: "Other", SourceFormat: "openai",
			Revision: 1, Steps: steps("t2", "user", "assistant")}),
		f.ev("bob", events.TraceImported, events.TraceImportedV1{TraceID: "t9", Title: "Bob's", SourceFormat: "stash",
			Revision: 1, Steps: steps("t9", "user", "assistant", "user")}),
		f.ev("alice", events.AnnotationAdded, events.AnnotationAddedV1{AnnotationID: "a1", TraceID: "t1", StepID: "t1-s2",
			Rating: new(-1), Comment: new("wrong order"), Quote: &events.Quote{Text: "lookup"}, AuthorID: "alice", AuthorName: "alice", TraceRevision: 1}),
		f.ev("alice", events.AnnotationAdded, events.AnnotationAddedV1{AnnotationID: "a2", TraceID: "t1", Rating: new(1),
			AuthorID: "alice", AuthorName: "alice", TraceRevision: 1}),
		f.ev("alice", events.AnnotationAdded, events.AnnotationAddedV1{AnnotationID: "a3", TraceID: "t2", StepID: "t2-s1",
			Comment: new("meh"), AuthorID: "alice", AuthorName: "alice", TraceRevision: 1}),
		f.ev("alice", events.AnnotationEdited, events.AnnotationEditedV1{AnnotationID: "a1", TraceID: "t1", Rating: new(-1),
			Comment: new("wrong order id"), LabelError: true, LabelErrorNote: new("misclick")}),
		f.ev("alice", events.AnnotationRemoved, events.AnnotationRemovedV1{AnnotationID: "a3", TraceID: "t2", Reason: events.RemovedByUser}),
		f.ev("alice", events.TraceContributionSet, events.TraceContributionSetV1{TraceID: "t1", Contribute: true, Revision: 1, Via: events.ContributionViaAPI}),
		f.ev("alice", events.TraceContributionSet, events.TraceContributionSetV1{TraceID: "t2", Contribute: true, Revision: 1, Via: events.ContributionViaImport}),
		f.ev("alice", events.TraceContributionSet, events.TraceContributionSetV1{TraceID: "t2", Contribute: false, Revision: 1, Via: events.ContributionViaAPI}),
		f.ev("alice", events.TraceRevised, events.TraceRevisedV1{TraceID: "t2", Revision: 2, Mode: events.RevisionAppended,
			Title: "Other", SourceFormat: "openai", Steps: []events.StepRecord{{ID: "t2-s2", Index: 2, Step: domain.Step{Role: "user", Content: "more"}}}}),
		f.ev("bob", events.TraceDeleted, events.TraceDeletedV1{TraceID: "t9"}),
		f.ev("bob", events.TraceImported, events.TraceImportedV1{TraceID: "t10", Title: "Bob's again", SourceFormat: "stash",
			Revision: 1, Steps: steps("t10", "user")}),
		f.ev("", events.APIKeyIssued, events.APIKeyIssuedV1{KeyID: "k", UserID: "alice", KeyHash: "h"}),
	}
}

func TestProjectsTheLog(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	require.NoError(t, f.proj.Apply(ctx, f.history()))

	require.Equal(t, [][]any{
		{"t1", "refund-1182", "Refund", "stash", "support-bot", int32(5), map[string]any{"agent": "support-bot"}},
		{"t2", nil, "Other", "openai", "openai", int32(3), map[string]any{}},
	}, f.rows("alice", "SELECT id, external_id, title, source_format, source_id, step_count, metadata FROM traces ORDER BY id"))
	// Consent follows trace.contribution_set; a revision keeps it.
	require.Equal(t, [][]any{{"t1", true}, {"t2", false}}, f.rows("alice", "SELECT id, contribute FROM traces ORDER BY id"))
	require.Equal(t, [][]any{{"t10", false}}, f.rows("bob", "SELECT id, contribute FROM traces"))
	require.Equal(t, [][]any{{"assistant", int64(3)}, {"system", int64(1)}, {"tool", int64(1)}, {"user", int64(3)}},
		f.rows("alice", "SELECT role, count(*) FROM steps GROUP BY role ORDER BY role"))
	require.Equal(t, [][]any{{map[string]any{"order_id": 1182.0}, "lookup_order", "call_1"}},
		f.rows("alice", "SELECT tool_input, tool_name, tool_call_id FROM steps WHERE tool_name IS NOT NULL"))
	require.Equal(t, [][]any{
		{"a1", "t1-s2", int32(2), int32(-1), "wrong order id", true, "misclick", map[string]any{"text": "lookup", "prefix": "", "suffix": ""}},
		{"a2", nil, nil, int32(1), nil, false, nil, nil},
	}, f.rows("alice", "SELECT id, step_id, step_index, rating, comment, label_error, label_error_note, quote FROM annotations ORDER BY id"))
	require.Equal(t, [][]any{{"t10", int64(1)}}, f.rows("bob", "SELECT trace_id, count(*) FROM steps GROUP BY ALL"))
	require.Equal(t, [][]any{{int64(0)}}, f.rows("bob", "SELECT count(*) FROM annotations"))
}

// Applying the same events again — one by one, in overlapping batches, or
// the whole log twice — changes nothing.
func TestDuplicatesChangeNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	h := f.history()
	require.NoError(t, f.proj.Apply(ctx, h))
	want := f.dump("alice")
	wantBob := f.dump("bob")

	require.NoError(t, f.proj.Apply(ctx, h))
	for i := range h {
		require.NoError(t, f.proj.Apply(ctx, h[i:min(i+3, len(h))]))
	}
	require.NoError(t, f.proj.Apply(ctx, append(append([]events.Envelope{}, h...), h...)))
	require.Equal(t, want, f.dump("alice"))
	require.Equal(t, wantBob, f.dump("bob"))

	// The same log delivered twice within one batch from scratch equals once.
	g := newFixture(t)
	require.NoError(t, g.proj.Apply(ctx, append(append([]events.Envelope{}, h...), h...)))
	require.Equal(t, want, g.dump("alice"))
}

// A replaced revision moves kept steps; annotations follow their step.
func TestReplacedRevisionReindexesAnnotations(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	s := steps("t1", "user", "assistant")
	require.NoError(t, f.proj.Apply(ctx, []events.Envelope{
		f.ev("alice", events.TraceImported, events.TraceImportedV1{TraceID: "t1", Title: "x", SourceFormat: "stash", Revision: 1, Steps: s}),
		f.ev("alice", events.AnnotationAdded, events.AnnotationAddedV1{AnnotationID: "a1", TraceID: "t1", StepID: "t1-s1", Rating: new(1)}),
	}))
	moved := []events.StepRecord{{ID: "new", Index: 0, Step: domain.Step{Role: "system", Content: "sys"}}, s[0], s[1]}
	moved[1].Index, moved[2].Index = 1, 2
	require.NoError(t, f.proj.Apply(ctx, []events.Envelope{
		f.ev("alice", events.TraceRevised, events.TraceRevisedV1{TraceID: "t1", Revision: 2, Mode: events.RevisionReplaced,
			Title: "x2", SourceFormat: "stash", Steps: moved}),
	}))
	require.Equal(t, [][]any{{int32(2)}}, f.rows("alice", "SELECT step_index FROM annotations"))
	require.Equal(t, [][]any{{"x2", int32(3)}}, f.rows("alice", "SELECT title, step_count FROM traces"))
	require.Equal(t, [][]any{{"new", int32(0)}, {"t1-s0", int32(1)}, {"t1-s1", int32(2)}},
		f.rows("alice", "SELECT id, step_index FROM steps ORDER BY step_index"))
}

// A claim-checked payload is fetched from the blob store and verified.
func TestResolvesClaimChecks(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	e := f.ev("alice", events.TraceImported, events.TraceImportedV1{TraceID: "big", Title: "big", SourceFormat: "stash",
		Revision: 1, Steps: steps("big", "user", "assistant")})
	sum := sha256.Sum256(e.Payload)
	require.NoError(t, f.blobs.Put(ctx, "events/big.json", e.Payload))
	cc, err := json.Marshal(events.ClaimCheckPayload{ClaimCheck: &events.ClaimCheck{Key: "events/big.json",
		SHA256: hex.EncodeToString(sum[:]), Size: int64(len(e.Payload))}})
	require.NoError(t, err)
	e.Payload = cc
	require.NoError(t, f.proj.Apply(ctx, []events.Envelope{e}))
	require.Equal(t, [][]any{{int64(2)}}, f.rows("alice", "SELECT count(*) FROM steps WHERE trace_id = 'big'"))
}

// Bulk imports are applied in one transaction per owner and batch: 10,000
// traces × 20 steps in batches of 500 (the consumer's batch size).
func TestBulkImport(t *testing.T) {
	if testing.Short() {
		t.Skip("bulk")
	}
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	const traces, per = 10000, 20
	roles := make([]string, per)
	for i := range roles {
		roles[i] = []string{"user", "assistant"}[i%2]
	}
	var batch []events.Envelope
	start := time.Now()
	for i := range traces {
		id := fmt.Sprintf("t%05d", i)
		batch = append(batch, f.ev("alice", events.TraceImported, events.TraceImportedV1{TraceID: id, Title: id,
			SourceFormat: "stash", Revision: 1, Steps: steps(id, roles...)}))
		if len(batch) == 500 {
			require.NoError(t, f.proj.Apply(ctx, batch))
			batch = batch[:0]
		}
	}
	t.Logf("applied %d traces × %d steps in %s", traces, per, time.Since(start).Round(time.Millisecond))
	require.Equal(t, [][]any{{int64(traces * per), int64(traces)}}, f.rows("alice", "SELECT count(*), count(DISTINCT trace_id) FROM steps"))
}

// Model and token usage of the LLM call that produced a step (its
// metadata.model and metadata.usage, as the OTLP adapter writes them) are
// columns of steps, so SQL can sum usage per model; NULL where none was
// recorded.
func TestStepsUsageColumns(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	s := steps("t1", "user", "assistant", "tool", "assistant")
	s[1].Metadata = map[string]any{"model": "gpt-4o", "usage": map[string]any{"input_tokens": 120, "output_tokens": 15, "total_tokens": 135, "cached_input_tokens": 64}}
	s[3].Metadata = map[string]any{"model": "gpt-4o-mini", "usage": map[string]any{"input_tokens": 160, "output_tokens": 9, "total_tokens": 169}}
	require.NoError(t, f.proj.Apply(ctx, []events.Envelope{
		f.ev("alice", events.TraceImported, events.TraceImportedV1{TraceID: "t1", Title: "Live", SourceFormat: "otel", Revision: 1, Steps: s[:2]}),
		f.ev("alice", events.TraceRevised, events.TraceRevisedV1{TraceID: "t1", Revision: 2, Mode: events.RevisionAppended, Steps: s[2:]}),
	}))
	require.Equal(t, [][]any{
		{int32(0), nil, nil, nil, nil, nil},
		{int32(1), "gpt-4o", int32(120), int32(15), int32(135), int32(64)},
		{int32(2), nil, nil, nil, nil, nil},
		{int32(3), "gpt-4o-mini", int32(160), int32(9), int32(169), nil},
	}, f.rows("alice", "SELECT step_index, model, input_tokens, output_tokens, total_tokens, cached_tokens FROM steps ORDER BY step_index"))
	require.Equal(t, [][]any{{"gpt-4o", float64(135)}, {"gpt-4o-mini", float64(169)}},
		f.rows("alice", "SELECT model, sum(total_tokens)::DOUBLE FROM steps WHERE model IS NOT NULL GROUP BY model ORDER BY model"))
}
