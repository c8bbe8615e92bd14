package main

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/gpuworker/worker"
	"github.com/criticml/critic/platform/llm"
	"github.com/criticml/critic/platform/llm/llmtest"
	"github.com/criticml/critic/platform/metrics/metricstest"
	"github.com/criticml/critic/platform/telemetry"
)

var titleSchema = llm.Object(map[string]*llm.Schema{"title": llm.String("a title")})

// TestWorkerMetricsCountLLMCalls wires the model roles the way `critic
// worker` and `critic run` do, calls them against a scripted provider and
// scrapes the worker's /metrics: each provider request counts once under
// its provider and role, failures as errors, with the tokens the provider
// reported.
func TestWorkerMetricsCountLLMCalls(t *testing.T) {
	provider := llmtest.New(t)
	t.Setenv("OPENAI_API_KEY", "test-key")
	t.Setenv(llm.EnvFastModel, "openai/fast-test")
	t.Setenv("CRITIC_FAST_API_BASE", provider.URL)
	t.Setenv(llm.EnvFeedbackModel, "openai/feedback-test")
	t.Setenv("CRITIC_FEEDBACK_API_BASE", provider.URL)
	t.Setenv(llm.EnvStepLabelModel, "off")
	roles, err := loadLLMRoles()
	require.NoError(t, err)

	tel, err := telemetry.New(context.Background(), telemetry.Options{Service: "critic-worker", Metrics: true}, nil)
	require.NoError(t, err)
	addr, stop, err := serveWorkerMetrics("127.0.0.1:0", tel)
	require.NoError(t, err)
	t.Cleanup(stop)
	var wc worker.Config
	roles.workerModels(&wc, llmObserver(tel))
	require.NotNil(t, wc.Fast)
	require.NotNil(t, wc.Feedback)
	require.Equal(t, tel.Metrics, wc.LLMObserver, "GEPA's clients, made by the worker, report to the same metrics")

	ctx := context.Background()
	req := llm.Request{Name: "title", Instructions: "title it", Input: "a trace", Schema: titleSchema}
	provider.Enqueue(
		llmtest.JSON(map[string]any{"title": "one"}).WithUsage(100, 5),
		llmtest.JSON(map[string]any{"title": "two"}).WithUsage(40, 3),
		llmtest.Status(400),
		llmtest.JSON(map[string]any{"title": "three"}).WithUsage(7, 2),
	)
	_, err = wc.Fast.Call(ctx, req)
	require.NoError(t, err)
	_, err = wc.Fast.Call(ctx, req)
	require.NoError(t, err)
	_, err = wc.Fast.Call(ctx, req)
	require.Error(t, err, "a 400 is final")
	_, err = wc.Feedback.Call(ctx, req)
	require.NoError(t, err)
	require.Equal(t, 4, provider.Calls())

	f := metricstest.Scrape(t, "http://"+addr+"/metrics")
	fast := []string{"provider=openai", "role=fast"}
	feedback := []string{"provider=openai", "role=feedback"}
	require.Equal(t, 2.0, f.Value("critic_llm_requests_total", append(fast, "outcome=ok")...))
	require.Equal(t, 1.0, f.Value("critic_llm_requests_total", append(fast, "outcome=error")...))
	require.Equal(t, 1.0, f.Value("critic_llm_requests_total", append(feedback, "outcome=ok")...))
	require.Equal(t, 0.0, f.Value("critic_llm_requests_total", append(feedback, "outcome=error")...))
	require.Equal(t, 3.0, f.Value("critic_llm_request_duration_seconds", fast...), "one latency sample per request")
	require.Equal(t, 1.0, f.Value("critic_llm_request_duration_seconds", feedback...))
	require.Equal(t, 140.0, f.Value("critic_llm_tokens_total", append(fast, "direction=prompt")...))
	require.Equal(t, 8.0, f.Value("critic_llm_tokens_total", append(fast, "direction=completion")...))
	require.Equal(t, 7.0, f.Value("critic_llm_tokens_total", append(feedback, "direction=prompt")...))
	require.Equal(t, 2.0, f.Value("critic_llm_tokens_total", append(feedback, "direction=completion")...))

	// A GEPA run's model is the tenant's string: it is counted under its
	// provider and never appears on the unauthenticated /metrics.
	tenantModel := "tenant-model-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	gepaTask := llm.New(llm.Model{Provider: llm.ProviderOpenAI, Name: tenantModel, APIBase: provider.URL, APIKey: "test-key"},
		llm.Options{Role: "gepa_task", Observer: wc.LLMObserver})
	provider.Enqueue(llmtest.JSON(map[string]any{"title": "gepa"}).WithUsage(3, 1))
	_, err = gepaTask.Call(ctx, req)
	require.NoError(t, err)
	f = metricstest.Scrape(t, "http://"+addr+"/metrics")
	require.Equal(t, 1.0, f.Value("critic_llm_requests_total", "provider=openai", "role=gepa_task", "outcome=ok"))
	res, err := http.Get("http://" + addr + "/metrics")
	require.NoError(t, err)
	defer res.Body.Close()
	page, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.NotContains(t, string(page), tenantModel)
	require.NotContains(t, string(page), "fast-test", "no model name is a label, configured ones included")
}

// TestLLMObserverOffWithoutMetrics: with metrics off there is no observer
// (a nil registry must not be called).
func TestLLMObserverOffWithoutMetrics(t *testing.T) {
	tel, err := telemetry.New(context.Background(), telemetry.Options{Service: "critic-worker"}, nil)
	require.NoError(t, err)
	require.Nil(t, llmObserver(tel))
	require.Nil(t, llmObserver(nil))
}
