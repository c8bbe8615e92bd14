package llm_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/platform/llm"
	"github.com/criticml/critic/platform/llm/llmtest"
)

// Chat sends the conversation as given, returns plain text, retries
// transient failures like Call, and reports an empty answer as malformed.
func TestChat(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t)
	srv.Enqueue(llmtest.Status(429).WithRetryAfter("0"), llmtest.Reply{Content: "  Let me check the order.  "}.WithUsage(30, 6), llmtest.Reply{Content: ""})
	c := client(srv.URL, llm.ProviderAnthropic, llm.Options{})
	msgs := []llm.ChatMessage{{Role: "system", Content: "skill"}, {Role: "user", Content: "refund?"}, {Role: "assistant", Content: "which order?"}, {Role: "user", Content: "7"}}
	res, err := c.Chat(context.Background(), msgs, 100)
	require.NoError(t, err)
	require.Equal(t, "Let me check the order.", res.Text)
	require.Equal(t, 2, res.Attempts)
	require.Equal(t, 30, res.Usage.InputTokens)
	req := srv.Requests()[1]
	require.Len(t, req.Messages, 4)
	require.Equal(t, "assistant", req.Messages[2].Role)
	require.Empty(t, req.SchemaName, "no schema and no tool: free text")

	_, err = c.Chat(context.Background(), msgs, 100)
	var le *llm.Error
	require.True(t, errors.As(err, &le))
	require.Equal(t, llm.KindMalformed, le.Kind)
	require.Equal(t, 3, srv.Calls(), "an empty answer is not retried")
}
