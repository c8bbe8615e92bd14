package label_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/labels"
	"github.com/criticml/critic/gpuworker/label"
	"github.com/criticml/critic/gpuworker/label/labeltest"
	"github.com/criticml/critic/platform/llm"
	"github.com/criticml/critic/platform/llm/llmtest"
)

// session is a user request, then n tool calls with results, then an answer.
func session(n int) []domain.Step {
	steps := []domain.Step{{Role: domain.RoleUser, Content: "find the invoice"}}
	for i := range n {
		id := fmt.Sprintf("c%d", i)
		steps = append(steps,
			domain.Step{Role: domain.RoleAssistant, ToolName: "search", ToolInput: map[string]any{"q": fmt.Sprint(i)}, ToolCallID: id},
			domain.Step{Role: domain.RoleTool, Content: fmt.Sprintf("result %d", i), ToolName: "search", ToolCallID: id})
	}
	return append(steps, domain.Step{Role: domain.RoleAssistant, Content: "here it is"})
}

type recorder struct {
	mu      sync.Mutex
	batches [][]labels.Label
	usage   llm.Usage
}

func (r *recorder) report(_ context.Context, b []labels.Label, u llm.Usage) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.batches = append(r.batches, b)
	r.usage.Add(u)
	return nil
}

func (r *recorder) labels() map[string]labels.Label {
	out := map[string]labels.Label{}
	for _, b := range r.batches {
		for _, l := range b {
			out[l.ChunkID] = l
		}
	}
	return out
}

func newLabeler(t *testing.T, srv *llmtest.Server, conc int, lim labels.Limits) *label.Labeler {
	t.Helper()
	c := llm.New(llm.Model{Provider: llm.ProviderOpenAI, Name: "labeler", APIBase: srv.URL}, llm.Options{Concurrency: conc, MaxRetries: llm.NoRetries})
	return label.New(c, lim)
}

// TestLabelsEveryChunkThenOnlyTheNewOne labels a trace (one call per
// chunk, each call's answer validated and reported), then the same trace
// grown by one chunk: exactly one more model call, for the new chunk.
func TestLabelsEveryChunkThenOnlyTheNewOne(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t)
	srv.Handle(func(r llmtest.Request) llmtest.Reply { return labeltest.Reply(r).WithUsage(100, 20) })
	lab := newLabeler(t, srv, 4, labels.Limits{})

	steps := session(5) // user + 5 tool chunks + answer = 7 chunks
	rec := &recorder{}
	res, err := lab.Label(context.Background(), steps, nil, rec.report)
	require.NoError(t, err)
	require.Equal(t, 7, res.Targets)
	require.Equal(t, 7, res.Labeled)
	require.Empty(t, res.Failed)
	require.Equal(t, 7, srv.Calls(), "one call per chunk")
	got := rec.labels()
	chunks := labels.Chunks(steps)
	require.Len(t, got, len(chunks))
	for _, c := range chunks {
		l, ok := got[c.ID]
		require.True(t, ok, "chunk %s labeled", c.ID)
		require.Equal(t, c.Actor, l.Actor)
	}
	require.Equal(t, labels.KindToolCall, chunks[1].Kind)
	require.Equal(t, "tool_call", got[chunks[1].ID].Type)
	require.Equal(t, "answer", got[chunks[6].ID].Type)
	require.Equal(t, 7, rec.usage.Calls, "the usage of every call is reported")
	require.Equal(t, 700, rec.usage.InputTokens)

	// Every call: the instructions first, the window as the shared prefix,
	// the target last; the schema is the target actor's.
	reqs := srv.Requests()
	prefix := reqs[0].Messages[1].Content
	for _, r := range reqs {
		require.Len(t, r.Messages, 3)
		require.Equal(t, labels.Instructions(), r.Messages[0].Content)
		require.Equal(t, prefix, r.Messages[1].Content, "one window: every call shares the cached prefix")
		require.Equal(t, "step_label", r.SchemaName)
		id, actor := labeltest.Target(r)
		require.Contains(t, prefix, fmt.Sprintf("<chunk id=%q actor=%q", id, actor))
		require.Contains(t, string(r.Schema), `"`+actor+`"`)
	}

	// The session grows by one user message: one call, for that chunk.
	grown := append(append([]domain.Step{}, steps...), domain.Step{Role: domain.RoleUser, Content: "thanks, and the receipt?"})
	have := map[string]bool{}
	for id := range got {
		have[id] = true
	}
	rec2 := &recorder{}
	res, err = lab.Label(context.Background(), grown, have, rec2.report)
	require.NoError(t, err)
	require.Equal(t, 8, srv.Calls(), "re-labeling a trace grown by one chunk makes exactly one model call")
	require.Equal(t, 1, res.Targets)
	newChunks := labels.Chunks(grown)
	require.Equal(t, map[string]labels.Label{newChunks[7].ID: rec2.labels()[newChunks[7].ID]}, rec2.labels())
}

// TestInvalidAnswersFailTheirChunkOnly: an answer that names another chunk
// is asked for once more, then the chunk fails with a reason naming it;
// the other chunks are still labeled and reported.
func TestInvalidAnswersFailTheirChunkOnly(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t)
	steps := session(1)
	chunks := labels.Chunks(steps)
	bad := chunks[1].ID
	srv.Handle(func(r llmtest.Request) llmtest.Reply {
		if id, _ := labeltest.Target(r); id == bad {
			return llmtest.JSON(map[string]any{"chunk_id": chunks[2].ID, "task_id": "t1", "actor": "agent", "type": "tool_call", "effect": "lookup",
				"result": "ok", "duplicate_of": nil, "is_output": false, "outcome": "none", "stance": "none", "coverage": "none", "evidence": "", "note": ""})
		}
		return labeltest.Reply(r)
	})
	lab := newLabeler(t, srv, 2, labels.Limits{})
	rec := &recorder{}
	res, err := lab.Label(context.Background(), steps, nil, rec.report)
	require.NoError(t, err)
	require.Equal(t, []string{bad}, res.Failed)
	require.ErrorContains(t, res.Err, "not the target "+fmt.Sprintf("%q", bad))
	require.Equal(t, 2, res.Labeled)
	require.Len(t, rec.labels(), 2)
	require.Equal(t, 4, srv.Calls(), "two good calls, the bad chunk asked twice")
}

// TestEvidenceMustQuoteTheChunk: a label whose evidence is not in the
// chunk (a model quoting something else, or making it up) is not recorded.
func TestEvidenceMustQuoteTheChunk(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t)
	steps := []domain.Step{{Role: domain.RoleUser, Content: "Find   the Invoice"}, {Role: domain.RoleAssistant, Content: "done"}}
	srv.Handle(func(r llmtest.Request) llmtest.Reply {
		id, actor := labeltest.Target(r)
		if actor == "user" {
			return llmtest.JSON(map[string]any{"chunk_id": id, "task_id": "t1", "actor": "user", "intent": "request",
				"verdict": "none", "verdict_target": nil, "sentiment": "neutral", "evidence": "find the invoice", "note": ""})
		}
		return llmtest.JSON(map[string]any{"chunk_id": id, "task_id": "t1", "actor": "agent", "type": "answer", "effect": "none",
			"result": "none", "duplicate_of": nil, "is_output": true, "outcome": "solved", "stance": "confident", "coverage": "full",
			"evidence": "the refund was issued", "note": ""})
	})
	rec := &recorder{}
	res, err := newLabeler(t, srv, 2, labels.Limits{}).Label(context.Background(), steps, nil, rec.report)
	require.NoError(t, err)
	require.Equal(t, 1, res.Labeled, "the user label quotes its chunk (case and spacing aside)")
	require.Len(t, res.Failed, 1)
	require.ErrorContains(t, res.Err, "is not a quote of the chunk")
}

// TestLargeTraceUsesWindows: a trace above the window budget is labeled in
// several windows, each call's context within the budget, every target
// labeled once.
func TestLargeTraceUsesWindows(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t)
	srv.Handle(labeltest.Reply)
	lim := labels.Limits{MaxChunks: 10, MaxChars: 200_000, Overlap: 3, ExcerptChars: 8_000}
	lab := newLabeler(t, srv, 4, lim)
	steps := session(30)
	rec := &recorder{}
	res, err := lab.Label(context.Background(), steps, nil, rec.report)
	require.NoError(t, err)
	require.Equal(t, 32, res.Labeled)
	require.Len(t, rec.labels(), 32)
	prefixes := map[string]bool{}
	for _, r := range srv.Requests() {
		ctx := r.Messages[1].Content
		prefixes[ctx] = true
		require.LessOrEqual(t, strings.Count(ctx, "<chunk id="), lim.MaxChunks)
		id, _ := labeltest.Target(r)
		require.Contains(t, ctx, id, "the target is inside its window")
	}
	require.Greater(t, len(prefixes), 1, "several windows")
}

// TestSchemaMatchesTheLabelSchema: what is sent to the provider is the
// domain's label schema (same properties, enums and nullability).
func TestSchemaMatchesTheLabelSchema(t *testing.T) {
	t.Parallel()
	for _, a := range []labels.Actor{labels.ActorUser, labels.ActorAgent} {
		b, err := label.SchemaJSON(a)
		require.NoError(t, err)
		var sent map[string]any
		require.NoError(t, json.Unmarshal(b, &sent))
		want := labels.Schema(a)["properties"].(map[string]any)
		props := sent["properties"].(map[string]any)
		require.Len(t, props, len(want))
		for k, v := range want {
			p := props[k].(map[string]any)
			if e, ok := v.(map[string]any)["enum"]; ok {
				require.ElementsMatch(t, e, p["enum"], k)
			}
		}
		require.Equal(t, []any{"string", "null"}, props[map[labels.Actor]string{labels.ActorUser: "verdict_target", labels.ActorAgent: "duplicate_of"}[a]].(map[string]any)["type"])
	}
}
