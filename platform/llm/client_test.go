package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/platform/llm"
	"github.com/criticml/critic/platform/llm/llmtest"
)

var verdict = llm.Object(map[string]*llm.Schema{
	"label":  llm.Enum("the verdict", "positive", "negative", "unclear"),
	"quote":  llm.NullableString("verbatim excerpt"),
	"reason": llm.String("why"),
})

func client(srv string, provider string, o llm.Options) *llm.Client {
	if o.BaseBackoff == 0 {
		o.BaseBackoff = time.Millisecond
	}
	return llm.New(llm.Model{Provider: provider, Name: "test-model", APIBase: srv, APIKey: "k"}, o)
}

func call(c *llm.Client) (llm.Response, error) {
	return c.Call(context.Background(), llm.Request{Name: "verdict", Instructions: "judge", Context: "ctx", Input: "target", Schema: verdict})
}

func TestValidOutputBothWays(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t)
	srv.Enqueue(llmtest.JSON(map[string]any{"label": "positive", "quote": nil, "reason": "ok"}).WithUsage(120, 7),
		llmtest.JSON(map[string]any{"label": "negative", "quote": "wrong", "reason": "bad"}))
	res, err := call(client(srv.URL, llm.ProviderOpenAI, llm.Options{}))
	require.NoError(t, err)
	require.JSONEq(t, `{"label":"positive","quote":null,"reason":"ok"}`, string(res.JSON))
	require.Equal(t, llm.Usage{Calls: 1, InputTokens: 120, OutputTokens: 7}, res.Usage)

	// Anthropic's OpenAI-compatible endpoint: the schema goes as a forced tool.
	res, err = call(client(srv.URL, llm.ProviderAnthropic, llm.Options{}))
	require.NoError(t, err)
	require.JSONEq(t, `{"label":"negative","quote":"wrong","reason":"bad"}`, string(res.JSON))

	reqs := srv.Requests()
	require.Len(t, reqs, 2)
	require.False(t, reqs[0].ToolCalling)
	require.True(t, reqs[1].ToolCalling)
	for _, r := range reqs {
		require.Equal(t, "verdict", r.SchemaName)
		require.Equal(t, "Bearer k", r.Header.Get("Authorization"))
		require.Equal(t, "test-model", r.Model)
		// Stable parts first: instructions, then the context, then the target.
		require.Equal(t, []llmtest.Message{{Role: "system", Content: "judge"}, {Role: "user", Content: "ctx"}, {Role: "user", Content: "target"}}, r.Messages)
		var schema map[string]any
		require.NoError(t, json.Unmarshal(r.Schema, &schema))
		require.Equal(t, false, schema["additionalProperties"])
		require.ElementsMatch(t, []any{"label", "quote", "reason"}, schema["required"])
	}
}

func TestMalformedJSONFailsAfterOneRetry(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t)
	srv.Enqueue(llmtest.Reply{Content: `{"label": "positive"`}, llmtest.Reply{Content: "sure, here you go"})
	_, err := call(client(srv.URL, llm.ProviderOpenAI, llm.Options{}))
	var le *llm.Error
	require.ErrorAs(t, err, &le)
	require.Equal(t, llm.KindMalformed, le.Kind)
	require.Equal(t, 2, le.Attempts)
	require.Contains(t, err.Error(), "test-model")
	require.Contains(t, err.Error(), "not JSON")

	// A body that is not a chat completion at all.
	srv.Enqueue(llmtest.Malformed("<html>gateway</html>"))
	_, err = call(client(srv.URL, llm.ProviderOpenAI, llm.Options{RetryInvalid: llm.NoRetries}))
	require.ErrorAs(t, err, &le)
	require.Equal(t, llm.KindMalformed, le.Kind, err.Error())
}

func TestSchemaViolationNamesTheField(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t)
	srv.Enqueue(llmtest.JSON(map[string]any{"label": "great", "quote": nil, "reason": "x"}),
		llmtest.JSON(map[string]any{"label": "positive", "reason": "x"}),
		llmtest.JSON(map[string]any{"label": "positive", "quote": nil, "reason": "x", "extra": 1}))
	c := client(srv.URL, llm.ProviderOpenAI, llm.Options{RetryInvalid: llm.NoRetries})
	for _, field := range []string{"label", "quote", "extra"} {
		_, err := call(c)
		var le *llm.Error
		require.ErrorAs(t, err, &le)
		require.Equal(t, llm.KindSchema, le.Kind)
		require.Equal(t, field, le.Field)
		require.Contains(t, err.Error(), "field "+field)
	}
}

func TestRateLimitThenSuccessHonoursRetryAfter(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t)
	srv.Enqueue(llmtest.Status(429).WithRetryAfter("0.05"), llmtest.Status(503),
		llmtest.JSON(map[string]any{"label": "unclear", "quote": nil, "reason": "r"}))
	res, err := call(client(srv.URL, llm.ProviderOpenAI, llm.Options{BaseBackoff: time.Millisecond}))
	require.NoError(t, err)
	require.Equal(t, 3, res.Attempts)
	require.Equal(t, 3, srv.Calls())
	require.Equal(t, 1, res.Usage.Calls, "only the answered attempt reports usage")

	d, ok := llm.ParseRetryAfter(http.Header{"Retry-After": {"7"}}, time.Now())
	require.True(t, ok)
	require.Equal(t, 7*time.Second, d)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	d, ok = llm.ParseRetryAfter(http.Header{"Retry-After": {now.Add(3 * time.Second).Format(http.TimeFormat)}}, now)
	require.True(t, ok)
	require.Equal(t, 3*time.Second, d)
	d, ok = llm.ParseRetryAfter(http.Header{"Retry-After-Ms": {"250"}}, now)
	require.True(t, ok)
	require.Equal(t, 250*time.Millisecond, d)
}

func TestServerErrorsUntilFailure(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t)
	srv.Handle(func(llmtest.Request) llmtest.Reply { return llmtest.Status(500) })
	_, err := call(client(srv.URL, llm.ProviderAnthropic, llm.Options{MaxRetries: 2}))
	var le *llm.Error
	require.ErrorAs(t, err, &le)
	require.Equal(t, llm.KindHTTP, le.Kind)
	require.Equal(t, 500, le.Status)
	require.Equal(t, 3, le.Attempts)
	require.Equal(t, 3, srv.Calls())
	require.Contains(t, err.Error(), "HTTP 500 after 3 attempt(s)")
	require.Contains(t, err.Error(), "anthropic at "+srv.URL)

	// A 400 is final: no retry.
	srv2 := llmtest.New(t)
	srv2.Handle(func(llmtest.Request) llmtest.Reply { return llmtest.Status(400) })
	_, err = call(client(srv2.URL, llm.ProviderOpenAI, llm.Options{}))
	require.ErrorAs(t, err, &le)
	require.Equal(t, 1, srv2.Calls())
}

func TestTimeout(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t)
	srv.Handle(func(llmtest.Request) llmtest.Reply {
		return llmtest.JSON(map[string]any{"label": "unclear", "quote": nil, "reason": "r"}).WithDelay(2 * time.Second)
	})
	_, err := call(client(srv.URL, llm.ProviderOpenAI, llm.Options{Timeout: 50 * time.Millisecond, MaxRetries: 1}))
	var le *llm.Error
	require.ErrorAs(t, err, &le)
	require.Equal(t, llm.KindTimeout, le.Kind, err.Error())
	require.Equal(t, 2, le.Attempts)
	require.Contains(t, err.Error(), "timed out")

	// The caller's context ends the call too, without further retries.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	_, err = client(srv.URL, llm.ProviderOpenAI, llm.Options{}).Call(ctx, llm.Request{Name: "verdict", Input: "x", Schema: verdict})
	require.ErrorAs(t, err, &le)
	require.Equal(t, llm.KindTimeout, le.Kind)
}

func TestDeadAddress(t *testing.T) {
	t.Parallel()
	dead := llmtest.DeadURL(t)
	_, err := call(client(dead, llm.ProviderOpenAI, llm.Options{MaxRetries: 1}))
	var le *llm.Error
	require.ErrorAs(t, err, &le)
	require.Equal(t, llm.KindNetwork, le.Kind, err.Error())
	require.Contains(t, err.Error(), dead)
	require.Contains(t, err.Error(), "unreachable")
}

func TestConcurrencyCap(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t)
	srv.SetLatency(20 * time.Millisecond)
	srv.Handle(func(llmtest.Request) llmtest.Reply {
		return llmtest.JSON(map[string]any{"label": "unclear", "quote": nil, "reason": "r"})
	})
	c := client(srv.URL, llm.ProviderOpenAI, llm.Options{Concurrency: 3})
	errs := make(chan error, 12)
	for range 12 {
		go func() { _, err := call(c); errs <- err }()
	}
	for range 12 {
		require.NoError(t, <-errs)
	}
	require.LessOrEqual(t, srv.MaxInFlight(), 3)
	require.Equal(t, 12, srv.Calls())
}

func TestResolveRoleNamesTheVariable(t *testing.T) {
	t.Parallel()
	env := func(kv map[string]string) llm.Getenv { return func(k string) string { return kv[k] } }
	_, err := llm.ResolveRole(env(nil), llm.EnvFeedbackModel, llm.DefaultFeedbackModel)
	var ce *llm.ConfigError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "ANTHROPIC_API_KEY", ce.Variable)
	require.Contains(t, err.Error(), "set ANTHROPIC_API_KEY")

	_, err = llm.ResolveRole(env(map[string]string{"CRITIC_FEEDBACK_MODEL": "openai/gpt-4.1-mini"}), llm.EnvFeedbackModel, llm.DefaultFeedbackModel)
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "OPENAI_API_KEY", ce.Variable)

	_, err = llm.ResolveRole(env(map[string]string{"CRITIC_FEEDBACK_MODEL": "gemini/x"}), llm.EnvFeedbackModel, "")
	require.ErrorAs(t, err, &ce)
	require.Contains(t, err.Error(), `unknown provider "gemini"`)

	// An OpenAI-compatible local server needs no key.
	m, err := llm.ResolveRole(env(map[string]string{"CRITIC_FEEDBACK_MODEL": "openai/qwen3", "CRITIC_FEEDBACK_API_BASE": "http://127.0.0.1:8000/v1"}), llm.EnvFeedbackModel, "")
	require.NoError(t, err)
	require.Equal(t, "http://127.0.0.1:8000/v1", m.APIBase)
	require.Equal(t, "openai/qwen3", m.String())

	m, err = llm.ResolveRole(env(map[string]string{"ANTHROPIC_API_KEY": "a"}), llm.EnvFastModel, llm.DefaultFastModel)
	require.NoError(t, err)
	require.Equal(t, llm.DefaultAnthropicBaseURL, m.APIBase)
	require.Equal(t, "claude-haiku-4-5", m.Name)
	require.False(t, errors.Is(err, ce))
}

func TestReasoningModelsGetACompletionBudget(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t)
	srv.Handle(func(llmtest.Request) llmtest.Reply {
		return llmtest.JSON(map[string]any{"label": "unclear", "quote": nil, "reason": "r"})
	})
	for name, want := range map[string]string{"gpt-5-mini": `"max_completion_tokens":8192`, "gpt-4.1-mini": `"max_tokens":100`} {
		c := llm.New(llm.Model{Provider: llm.ProviderOpenAI, Name: name, APIBase: srv.URL}, llm.Options{})
		_, err := c.Call(context.Background(), llm.Request{Name: "verdict", Input: "x", Schema: verdict, MaxTokens: 100})
		require.NoError(t, err, name)
		reqs := srv.Requests()
		require.Contains(t, string(reqs[len(reqs)-1].Body), want, name)
	}
}
