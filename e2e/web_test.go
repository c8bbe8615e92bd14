package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/platform/llm/llmtest"
)

// chromiumPath is Debian's Chromium (apt-get install chromium), or
// $CRITIC_CHROMIUM; the browser tests never download a browser.
func chromiumPath() string {
	if p := os.Getenv("CRITIC_CHROMIUM"); p != "" {
		return p
	}
	return "/usr/bin/chromium"
}

// playwrightReport is the part of Playwright's JSON report CI needs.
type playwrightReport struct {
	Stats struct {
		Expected   int `json:"expected"`
		Unexpected int `json:"unexpected"`
		Skipped    int `json:"skipped"`
		Flaky      int `json:"flaky"`
	} `json:"stats"`
	Errors []struct {
		Message string `json:"message"`
	} `json:"errors"`
}

// TestWebApp runs the browser suite (web/e2e/*.spec.ts) in Chromium against
// the real binary serving the embedded app, on a real stack: sign-in,
// import through the UI, filters, the viewer, annotating, the keyboard,
// the review queue, themes, a read-only key and another account's trace,
// with axe-core on every page and every API response validated against the
// OpenAPI document. It prints `N passed, N failed` and fails on any
// failure.
func TestWebApp(t *testing.T) {
	webDir := requireBrowser(t)

	// A worker joins (as in reward_models_test.go) so the models pages can
	// watch a tiny model train to succeeded and score actions.
	// The feedback model is the scripted test provider (never a real one),
	// so the learning report has findings with evidence to show.
	srv := llmtest.New(t)
	srv.Handle(scriptedClassifier)
	// The fast model (section summaries, completion) is scripted too.
	llmEnv := []string{"CRITIC_FEEDBACK_MODEL=openai/scripted-classifier", "CRITIC_FEEDBACK_API_BASE=" + srv.URL, "OPENAI_API_KEY=test-key",
		"CRITIC_FAST_MODEL=openai/scripted-fast", "CRITIC_FAST_API_BASE=" + webAssessor(t)}
	in, kafkaPort := startServeForJobs(t, llmEnv...)
	gepaTask, gepaReflection, gepaGate := webGepaModels(t)
	// The GEPA task model is a loopback test server: the operator allows it
	// (tenant-named bases on loopback are refused otherwise).
	startWorkerWith(t, in, kafkaPort, "web-w1", append(llmEnv, "OPENAI_BASE_URL="+gepaReflection, "CRITIC_ALLOWED_API_BASES="+gepaTask)...)
	base := tinyBase(t, in)
	key := in.newUser("reviewer", false)
	out, err := in.cli("users", "issue-key", "--name", "reviewer", "--read-only-key")
	require.NoError(t, err, out)
	roKey := keyRe.FindStringSubmatch(out)[1]
	otherKey := in.newUser("outsider", false)
	other := in.importTraces(otherKey, "stash", `{"title":"Someone else's trace","steps":[{"role":"user","content":"private"},{"role":"assistant","content":"ok"}]}`)

	// A 2,000-step session, and a trace with spans (a subagent under the root).
	steps := make([]map[string]any, 2000)
	for i := range steps {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		steps[i] = map[string]any{"role": role, "content": fmt.Sprintf("message %d of a long session: **bold** and `code`", i+1)}
	}
	bigLine, err := json.Marshal(map[string]any{"title": "A 2,000-step session", "steps": steps})
	require.NoError(t, err)
	big := in.importTraces(key, "stash", string(bigLine))
	spans := in.importTraces(key, "stash", compactJSON(t, `{"title":"Agent with a subagent","steps":[{"role":"user","content":"plan a trip"},{"role":"assistant","content":"I'll ask the researcher."},{"role":"assistant","content":"Booked."}],
		"spans":[{"id":"root","parent_id":null,"name":"agent run","kind":"agent","start_ns":"1700000000000000000","end_ns":"1700000004000000000","input":null,"output":null,"step_indices":[0,1,2]},
		{"id":"sub","parent_id":"root","name":"researcher subagent","kind":"agent","start_ns":"1700000000500000000","end_ns":"1700000003000000000","input":null,"output":null,"step_indices":[1]},
		{"id":"tool","parent_id":"sub","name":"search_flights","kind":"tool","start_ns":"1700000001000000000","end_ns":"1700000002000000000","input":null,"output":null,"step_indices":[]}]}`))

	// The models pages use their own account, so its rated traces leave the
	// reviewer's list as the other tests expect it. A one-trace model fails
	// (too few pairs) for the failure view and Retry.
	trainerKey := in.newUser("trainer", false)
	rated := ratedTraces(t, in, trainerKey)
	first := in.getTrace(t, trainerKey, rated[0])
	c := in.do("POST", "/api/v1/rm/traces/"+rated[0]+"/annotations", trainerKey, map[string]any{"step_id": first.Steps[4]["id"],
		"comment": "It should have asked which currency first."})
	require.Equal(t, 200, c.Status, string(c.Body))
	few := in.do("POST", "/api/v1/rm/reward-models", trainerKey, map[string]any{"name": "one-trace", "trace_ids": rated[:1], "base_model": base})
	require.Equal(t, 200, few.Status, string(few.Body))
	in.waitModel(t, trainerKey, few.JSON(t)["id"].(string), "failed")
	out, err = in.cli("users", "issue-key", "--name", "trainer", "--read-only-key")
	require.NoError(t, err, out)
	trainerRO := keyRe.FindStringSubmatch(out)[1]

	// A labeled trace (step labels in its metadata) for task cards, label
	// chips and sections, on its own account.
	labelsKey := in.newUser("labeler", false)
	labeled := in.importTraces(labelsKey, "stash", labeledTrace(true))
	sectioned := in.importTraces(labelsKey, "stash", sectionedTrace())
	twoTasks := in.importTraces(labelsKey, "stash", twoTaskTrace())
	// Ten rated traces on their own account: a GEPA run over them holds
	// two out and reports held-out scores.
	holdoutKey := in.newUser("holdout", false)
	heldOutTraces(t, in, holdoutKey, 10)

	// Consent (web/e2e/consent.spec.ts) on its own account: two traces off,
	// one opted in on import.
	consentKey := in.newUser("consenter", false)
	in.importTraces(consentKey, "stash", `{"title":"Consent A","steps":[{"role":"user","content":"refund 1"},{"role":"assistant","content":"done 1"}]}`+"\n"+
		`{"title":"Consent B","steps":[{"role":"user","content":"refund 2"},{"role":"assistant","content":"done 2"}]}`)
	optedIn := in.do("POST", "/api/v1/rm/traces/import", consentKey, map[string]any{"format": "stash", "contribute": true,
		"data": `{"title":"Consent C","steps":[{"role":"user","content":"refund 3"},{"role":"assistant","content":"done 3"}]}`})
	require.Equal(t, 200, optedIn.Status, string(optedIn.Body))

	report := filepath.Join(t.TempDir(), "report.json")
	args := []string{"playwright", "test", "-c", "e2e/playwright.config.ts"}
	if only := os.Getenv("CRITIC_E2E_ONLY"); only != "" {
		args = append(args, strings.Fields(only)...) // e.g. "skills.spec.ts": a subset while working on one page
	}
	cmd := exec.Command("npx", args...)
	cmd.Dir = webDir
	cmd.Env = append(os.Environ(),
		"CRITIC_E2E_URL="+in.url, "CRITIC_E2E_KEY="+key, "CRITIC_E2E_READONLY_KEY="+roKey,
		"CRITIC_E2E_OTHER_TRACE="+other[0], "CRITIC_E2E_BIG_TRACE="+big[0], "CRITIC_E2E_SPANS_TRACE="+spans[0],
		"CRITIC_E2E_TRAINER_KEY="+trainerKey, "CRITIC_E2E_TRAINER_READONLY_KEY="+trainerRO, "CRITIC_E2E_LABELS_KEY="+labelsKey, "CRITIC_E2E_LABELED_TRACE="+labeled[0], "CRITIC_E2E_BASE_MODEL="+base, "CRITIC_E2E_GEPA_TASK_BASE="+gepaTask, "CRITIC_E2E_GEPA_GATE="+gepaGate, "CRITIC_E2E_HOLDOUT_KEY="+holdoutKey, "CRITIC_E2E_SECTIONED_TRACE="+sectioned[0],
		"CRITIC_E2E_REPORT="+report, "CRITIC_CHROMIUM="+chromiumPath(), "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1", "CI=1")
	cmd.Env = append(cmd.Env, "CRITIC_E2E_CONSENT_KEY="+consentKey, "CRITIC_E2E_TWO_TASK_TRACE="+twoTasks[0])
	if d := os.Getenv("CRITIC_E2E_SHOTS"); d != "" {
		cmd.Env = append(cmd.Env, "CRITIC_E2E_SHOTS="+d)
	}
	output, runErr := cmd.CombinedOutput()
	t.Logf("playwright:\n%s", output)
	raw, err := os.ReadFile(report)
	require.NoError(t, err, "playwright wrote no report (%v):\n%s", runErr, output)
	var r playwrightReport
	require.NoError(t, json.Unmarshal(raw, &r))
	passed := r.Stats.Expected + r.Stats.Flaky
	failed := r.Stats.Unexpected
	testNote("browser: %d passed, %d failed, %d skipped", passed, failed, r.Stats.Skipped)
	if r.Stats.Flaky > 0 {
		testNote("browser tests that passed only on retry (flaky): %d", r.Stats.Flaky)
	}
	for _, e := range r.Errors {
		t.Errorf("playwright: %s", strings.TrimSpace(e.Message))
	}
	require.Zero(t, failed, "browser tests failed (details above)")
	require.NoError(t, runErr)
	require.Greater(t, passed, 0, "no browser test ran")
}

// compactJSON puts a JSON document on one line (one JSONL record).
func compactJSON(t *testing.T, s string) string {
	var b bytes.Buffer
	require.NoError(t, json.Compact(&b, []byte(s)))
	return b.String()
}
