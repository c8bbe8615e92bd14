package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/platform/pg/pgtest"
)

// The conversation every scenario of e2e/otelsdk/run.cjs has with its
// scripted model (keep in step with the constants there).
const (
	sdkSystem = "You are a weather agent. Use get_weather."
	sdkResult = `{"temp_c":21,"sky":"clear","city":"Paris"}`
	sdkAnswer = "It is 21°C and clear in Paris."
	sdkCallID = "call_weather_1"
)

// otelSDKNode installs Node 22 and the suite's pinned npm packages
// (scripts/ensure-node22.sh) and returns the node binary; the test is
// skipped, with a note, only when they cannot be installed.
func otelSDKNode(t *testing.T) (node, dir string) {
	root := pgtest.ModuleRoot(t)
	out, err := exec.Command(filepath.Join(root, "scripts", "ensure-node22.sh")).Output()
	if err != nil {
		msg := err.Error()
		if ee, ok := err.(*exec.ExitError); ok {
			msg = strings.TrimSpace(string(ee.Stderr))
		}
		testNote("SKIPPED %s: the real OTel SDK suite's npm packages could not be installed: %s", t.Name(), msg)
		t.Skip("npm packages for e2e/otelsdk unavailable")
	}
	return strings.TrimSpace(string(out)), filepath.Join(root, "e2e", "otelsdk")
}

// TestOTLPRealSDKs runs the real instrumentation libraries from npm (the
// OpenTelemetry project's, OpenInference, OpenLLMetry, the Vercel AI SDK,
// Langfuse's OTel SDK, the OpenAI Agents SDK through OpenInference) with
// their real OTLP exporters against this receiver: chat and Responses APIs,
// batch and simple span processors, JSON and protobuf. Whatever order and
// grouping each SDK sends, the stored steps must be the conversation that
// happened: system, user, the assistant's tool call, the tool result paired
// by its call id (its JSON keys in the order recorded), the answer.
func TestOTLPRealSDKs(t *testing.T) {
	node, dir := otelSDKNode(t)
	in := startServe(t)
	key := in.newUser("agent", false)
	// Client-only instrumentation (the OpenInference and OpenLLMetry chat
	// quick-starts, no root span) exports every LLM call as its own OTel
	// trace re-sending the history: the receiver joins them, so every
	// scenario's conversation is listed once with all its steps.
	for _, sc := range []struct{ name string }{
		{"otel-chat-proto-simple"},
		{"otel-responses-json-batch"},
		{"openinference-chat-json-batch"},
		{"openinference-responses-proto-simple"},
		{"openllmetry-chat-proto-batch"},
		{"vercel-chat-json-simple"},
		{"vercel-responses-proto-batch"},
		{"langfuse-chat"},
		{"agents-responses-proto-batch"},
	} {
		t.Run(sc.name, func(t *testing.T) {
			cmd := exec.Command(node, "run.cjs", sc.name)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "CRITIC_OTLP="+in.url, "CRITIC_KEY="+key)
			out, err := cmd.Output()
			if ee, ok := err.(*exec.ExitError); ok {
				t.Fatalf("%s: %v\n%s", sc.name, err, ee.Stderr)
			}
			require.NoError(t, err)
			var res struct {
				TraceIDs []string `json:"trace_ids"`
			}
			require.NoError(t, json.Unmarshal(out, &res), string(out))
			require.NotEmpty(t, res.TraceIDs)

			listed := in.listedTracesOf(t, key, res.TraceIDs)
			require.Len(t, listed, 1, "one conversation is listed once: %v", listed)
			d := in.getTrace(t, key, listed[0])
			question := "What is the weather in Paris? (" + sc.name + ")"
			require.Equal(t, []string{"system", "user", "assistant", "tool", "assistant"}, stepRoles(d), stepsDump(d))
			s := d.Steps
			require.Equal(t, sdkSystem, s[0]["content"])
			s = s[1:]
			require.Equal(t, question, s[0]["content"])
			require.Equal(t, "get_weather", s[1]["tool_name"], stepsDump(d))
			require.Equal(t, map[string]any{"city": "Paris"}, s[1]["tool_input"], stepsDump(d))
			require.Equal(t, sdkCallID, s[1]["tool_call_id"], stepsDump(d))
			require.Equal(t, sdkCallID, s[2]["tool_call_id"], "the tool result pairs with its call: %s", stepsDump(d))
			require.Equal(t, sdkResult, s[2]["content"], "the tool result keeps its JSON key order")
			require.Equal(t, sdkAnswer, s[3]["content"])
		})
	}
}

// listedTracesOf returns the ids of the listed traces whose external id is
// one of the OTel trace ids an SDK exported.
func (in *instance) listedTracesOf(t *testing.T, key string, otelIDs []string) []string {
	t.Helper()
	want := map[string]bool{}
	for _, id := range otelIDs {
		want[id] = true
	}
	list := in.do("GET", "/api/v1/rm/traces?limit=200", key, nil).JSON(t)
	var ids []string
	for _, s := range list["traces"].([]any) {
		m := s.(map[string]any)
		if ext, _ := m["external_id"].(string); want[ext] {
			ids = append(ids, m["id"].(string))
		}
	}
	return ids
}

func stepsDump(d traceDetail) string {
	b, _ := json.MarshalIndent(d.Steps, "", " ")
	return string(b)
}
