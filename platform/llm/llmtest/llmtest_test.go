package llmtest_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/platform/llm"
	"github.com/criticml/critic/platform/llm/llmtest"
)

var answer = llm.Object(map[string]*llm.Schema{"v": llm.String("value")})

func ask(t *testing.T, srv *llmtest.Server, input string) (string, error) {
	c := llm.New(llm.Model{Provider: "openai", Name: "m", APIBase: srv.URL}, llm.Options{MaxRetries: llm.NoRetries, RetryInvalid: llm.NoRetries})
	res, err := c.Call(context.Background(), llm.Request{Name: "answer", Instructions: "i", Input: input, Schema: answer})
	if err != nil {
		return "", err
	}
	return string(res.JSON), nil
}

func TestScriptOrder(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t)
	rule := srv.On(func(r llmtest.Request) bool { return strings.Contains(r.Last(), "refund") },
		llmtest.JSON(map[string]any{"v": "rule-1"}), llmtest.JSON(map[string]any{"v": "rule-2"}))
	sticky := srv.On(func(r llmtest.Request) bool { return r.Contains("always") }, llmtest.JSON(map[string]any{"v": "sticky"}))
	sticky.Sticky = true
	srv.Enqueue(llmtest.JSON(map[string]any{"v": "queued"}))
	srv.Handle(func(r llmtest.Request) llmtest.Reply { return llmtest.JSON(map[string]any{"v": "fn:" + r.Last()}) })

	for _, tc := range []struct{ in, want string }{
		{"refund please", `{"v":"rule-1"}`},
		{"something", `{"v":"queued"}`},
		{"refund again", `{"v":"rule-2"}`},
		{"refund a third time", `{"v":"fn:refund a third time"}`}, // the rule is spent, the queue empty
		{"always", `{"v":"sticky"}`},
		{"always", `{"v":"sticky"}`},
	} {
		got, err := ask(t, srv, tc.in)
		require.NoError(t, err, tc.in)
		require.JSONEq(t, tc.want, got, tc.in)
	}
	require.Equal(t, 2, rule.Hits())
	require.Equal(t, 2, sticky.Hits())
	require.Equal(t, 6, srv.Calls())
	require.Equal(t, "answer", srv.Requests()[0].SchemaName)
}

func TestScriptRunsOutLoudly(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t)
	_, err := ask(t, srv, "x")
	require.ErrorContains(t, err, "no scripted reply left")
	require.ErrorContains(t, err, "HTTP 500")
}

func TestFaults(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t)
	srv.Enqueue(llmtest.Status(429).WithRetryAfter("1"), llmtest.Malformed("{not json"), llmtest.JSON(map[string]any{"v": "late"}).WithDelay(30*time.Millisecond))
	_, err := ask(t, srv, "a")
	var le *llm.Error
	require.ErrorAs(t, err, &le)
	require.Equal(t, 429, le.Status)
	_, err = ask(t, srv, "b")
	require.ErrorAs(t, err, &le)
	require.Equal(t, llm.KindMalformed, le.Kind)
	got, err := ask(t, srv, "c")
	require.NoError(t, err)
	require.JSONEq(t, `{"v":"late"}`, got)
}
