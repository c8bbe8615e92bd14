package llm_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/platform/llm"
	"github.com/criticml/critic/platform/llm/llmtest"
)

type observed struct {
	model, role        string
	prompt, completion int
	failed             bool
}

// recorder is an Observer that keeps what it was told.
type recorder struct {
	mu    sync.Mutex
	calls []observed
}

func (r *recorder) LLMCall(model, role string, _ time.Duration, prompt, completion int, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, observed{model, role, prompt, completion, err != nil})
}

// Every provider request is observed once — a retried 503 and an invalid
// answer asked for again count as requests of their own — for Call and
// Chat, under the client's model and role.
func TestObserverSeesEveryRequest(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t)
	rec := &recorder{}
	c := client(srv.URL, llm.ProviderOpenAI, llm.Options{Role: "feedback", Observer: rec})
	srv.Enqueue(llmtest.Status(503),
		llmtest.Malformed(`{"choices":[{"message":{"content":"not json"}}],"usage":{"prompt_tokens":9,"completion_tokens":1}}`),
		llmtest.JSON(map[string]any{"label": "positive", "quote": nil, "reason": "ok"}).WithUsage(120, 7))
	_, err := call(c)
	require.NoError(t, err)
	require.Equal(t, []observed{
		{"openai/test-model", "feedback", 0, 0, true},
		{"openai/test-model", "feedback", 9, 1, true},
		{"openai/test-model", "feedback", 120, 7, false},
	}, rec.calls)

	// WithObserver: the same client, observed under another role; the
	// original stays as it was.
	other := &recorder{}
	fast := c.WithObserver(other, "fast")
	srv.Enqueue(llmtest.Reply{Content: "hi"}.WithUsage(30, 6))
	_, err = fast.Chat(context.Background(), []llm.ChatMessage{{Role: "user", Content: "hello"}}, 50)
	require.NoError(t, err)
	require.Equal(t, []observed{{"openai/test-model", "fast", 30, 6, false}}, other.calls)
	require.Len(t, rec.calls, 3)
}
