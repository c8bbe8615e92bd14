package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/gpuworker/label/labeltest"
	"github.com/criticml/critic/platform/llm/llmtest"
)

type labelingView struct {
	Labeling struct {
		State     string  `json:"state"`
		Chunks    int     `json:"chunks"`
		Labeled   int     `json:"labeled"`
		ToLabel   int     `json:"to_label"`
		Reason    *string `json:"reason"`
		Model     *string `json:"model"`
		Retryable bool    `json:"retryable"`
	} `json:"labeling"`
	StepScores *struct {
		Source  string `json:"source"`
		Outcome string `json:"outcome"`
	} `json:"step_scores"`
}

func (in *instance) labeling(t *testing.T, key, id string) labelingView {
	r := in.do("GET", "/api/v1/rm/traces/"+id, key, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	var v labelingView
	require.NoError(t, json.Unmarshal(r.Body, &v))
	return v
}

// TestTracesAreLabeledByTheWorkerTier: with a step-label model configured
// (the test server), an imported trace is queued, labeled by `critic
// worker` one call per chunk, and scored from those labels on GET
// /traces/{id}; a re-import that adds one chunk costs one more call; a
// labeling run that fails shows state "failed" with the reason, and the
// owner's retry labels only what is missing.
func TestTracesAreLabeledByTheWorkerTier(t *testing.T) {
	srv := llmtest.New(t)
	var failUser, followUp atomic.Bool
	srv.Handle(func(r llmtest.Request) llmtest.Reply {
		id, actor := labeltest.Target(r)
		if actor == "user" && failUser.Load() && strings.Contains(r.Text(), "broken request") {
			return llmtest.Status(400)
		}
		if actor == "user" && followUp.Load() { // the model's second opinion, after a rescore
			return llmtest.JSON(map[string]any{"chunk_id": id, "task_id": "t1", "actor": "user", "intent": "follow_up",
				"verdict": "none", "verdict_target": nil, "sentiment": "neutral", "evidence": "", "note": ""})
		}
		return labeltest.Reply(r)
	})
	env := []string{"CRITIC_STEP_LABEL_MODEL=openai/scripted-labeler", "CRITIC_STEP_LABEL_API_BASE=" + srv.URL, "OPENAI_API_KEY=test-key"}
	in, kafkaPort := startServeForJobs(t, env...)
	key := in.newUser("labeler-owner", false)
	other := in.newUser("stranger", false)
	startWorkerWith(t, in, kafkaPort, "lw1", env...)

	trace := `{"id":"inv-1","steps":[{"role":"user","content":"find invoice 7"},` +
		`{"role":"assistant","content":"","tool_name":"search","tool_input":{"q":"7"},"tool_call_id":"c1"},` +
		`{"role":"tool","content":"invoice 7: paid","tool_name":"search","tool_call_id":"c1"},` +
		`{"role":"assistant","content":"Invoice 7 is paid."}%s]}`
	ids := in.importTraces(key, "stash", strings.Replace(trace, "%s", "", 1))
	id := ids[0]
	first := in.labeling(t, key, id)
	require.Contains(t, []string{"queued", "labeled"}, first.Labeling.State)
	require.NotNil(t, first.Labeling.Model)
	require.Equal(t, "openai/scripted-labeler", *first.Labeling.Model)
	require.Eventually(t, func() bool { return in.labeling(t, key, id).Labeling.State == "labeled" }, time.Minute, 200*time.Millisecond)
	v := in.labeling(t, key, id)
	require.Equal(t, 3, v.Labeling.Labeled)
	require.NotNil(t, v.StepScores)
	require.Equal(t, "labels", v.StepScores.Source)
	require.Equal(t, 3, srv.Calls(), "one call per chunk")
	// The model's labels are shown where imported ones are: on the first
	// step of each chunk as steps[].metadata.label (the tool result shares
	// its call's chunk and label).
	shown := in.stepLabels(t, key, id)
	require.Equal(t, []string{"user/request", "agent/tool_call", "", "agent/answer"}, shown)

	// The rescore control labels every chunk anew, not only missing ones:
	// three more calls, and the new answers supersede the old labels.
	followUp.Store(true)
	r := in.do("POST", "/api/v1/rm/traces/"+id+"/labeling/rescore", key, nil)
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Body))
	if body := string(r.Body); strings.Contains(body, `"state":"labeled"`) {
		// On an idle machine the worker tier can relabel every chunk
		// before the answer is read: then all three new calls were made.
		require.GreaterOrEqual(t, srv.Calls(), 6, "a labeled answer to a rescore means the new labels are in: %s", body)
	} else {
		require.Contains(t, body, `"state":"queued"`, "the labels await their new ones")
		require.Contains(t, body, `"to_label":3`)
	}
	require.Eventually(t, func() bool { return in.stepLabels(t, key, id)[0] == "user/follow_up" }, time.Minute, 200*time.Millisecond)
	require.Eventually(t, func() bool { return srv.Calls() == 6 }, time.Minute, 200*time.Millisecond, "a rescore asks for every chunk")
	require.Equal(t, []string{"user/follow_up", "agent/tool_call", "", "agent/answer"}, in.stepLabels(t, key, id))
	require.Equal(t, "labeled", in.labeling(t, key, id).Labeling.State)
	require.Equal(t, http.StatusNotFound, in.do("POST", "/api/v1/rm/traces/"+id+"/labeling/rescore", other, nil).Status, "another owner's trace")
	followUp.Store(false)

	// The trace grows by one chunk: one more call.
	in.importTraces(key, "stash", strings.Replace(trace, "%s", `,{"role":"user","content":"thanks"}`, 1))
	require.Eventually(t, func() bool {
		l := in.labeling(t, key, id).Labeling
		return l.State == "labeled" && l.Labeled == 4
	}, time.Minute, 200*time.Millisecond)
	require.Equal(t, 7, srv.Calls(), "re-labeling a trace grown by one chunk makes exactly one model call")

	// A run that fails: state failed, the reason, retryable.
	failUser.Store(true)
	bad := in.importTraces(key, "stash", `{"id":"bad-1","steps":[{"role":"user","content":"broken request"},{"role":"assistant","content":"ok"}]}`)[0]
	require.Eventually(t, func() bool { return in.labeling(t, key, bad).Labeling.State == "failed" }, time.Minute, 200*time.Millisecond)
	f := in.labeling(t, key, bad).Labeling
	require.True(t, f.Retryable)
	require.NotNil(t, f.Reason)
	require.Contains(t, *f.Reason, "HTTP 400")
	require.Equal(t, 1, f.Labeled, "the agent's answer was labeled")

	r = in.do("POST", "/api/v1/rm/traces/"+bad+"/labeling/retry", other, nil)
	require.Equal(t, http.StatusNotFound, r.Status, "another owner's trace")
	// A duplicate delivery of the label job (at least once: a consumer
	// group rebalancing at start redelivers) may still be calling the model:
	// let it fail too before the model is fixed, so the retry is what
	// labels the missing chunk.
	require.Eventually(t, func() bool {
		before := srv.Calls()
		time.Sleep(700 * time.Millisecond)
		return srv.Calls() == before
	}, time.Minute, 10*time.Millisecond, "the model is called no more")
	require.Equal(t, "failed", in.labeling(t, key, bad).Labeling.State)
	failUser.Store(false)
	calls := srv.Calls()
	r = in.do("POST", "/api/v1/rm/traces/"+bad+"/labeling/retry", key, nil)
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Body))
	// A duplicate delivery can still arrive after the quiet spell above (a
	// full make test saw one label the chunk just before the retry, which
	// then answered "labeled"); the retry answers queued when none did.
	if srv.Calls() == calls {
		require.Contains(t, string(r.Body), `"state":"queued"`)
	}
	require.Eventually(t, func() bool { return in.labeling(t, key, bad).Labeling.State == "labeled" }, time.Minute, 200*time.Millisecond)
	require.Equal(t, calls+1, srv.Calls(), "the retry labels only the missing chunk")
	r = in.do("POST", "/api/v1/rm/traces/"+bad+"/labeling/retry", key, nil)
	require.Equal(t, http.StatusConflict, r.Status, "nothing left to label")

	// Replay rebuilds labels, scores and labeling states from the events
	// without a model call.
	before, detail, calls := dumpReadModel(t, in), in.do("GET", "/api/v1/rm/traces/"+id, key, nil).Body, srv.Calls()
	out, err := in.cli("replay", "readmodel")
	require.NoError(t, err, out)
	require.Equal(t, before, dumpReadModel(t, in))
	require.JSONEq(t, string(detail), string(in.do("GET", "/api/v1/rm/traces/"+id, key, nil).Body))
	require.Equal(t, calls, srv.Calls(), "replay never calls a model")
}

// TestAutomaticLabelsInTheViewer: labels the step-label model made (a real
// worker, the scripted model) show in the browser as the chips imported
// labels get, and the viewer's rescore icon labels the trace anew
// (web/e2e/auto-labels.spec.ts). The same trace view links to the model
// trained on the trace (spec 001 "Trace messages"), and GET /traces/{id}
// lists the owner's models whose selection included it.
func TestAutomaticLabelsInTheViewer(t *testing.T) {
	webDir := requireBrowser(t)
	srv := llmtest.New(t)
	var followUp atomic.Bool
	srv.Handle(func(r llmtest.Request) llmtest.Reply {
		if id, actor := labeltest.Target(r); actor == "user" && followUp.Load() {
			return llmtest.JSON(map[string]any{"chunk_id": id, "task_id": "t1", "actor": "user", "intent": "follow_up",
				"verdict": "none", "verdict_target": nil, "sentiment": "neutral", "evidence": "", "note": ""})
		}
		return labeltest.Reply(r)
	})
	env := []string{"CRITIC_STEP_LABEL_MODEL=openai/scripted-labeler", "CRITIC_STEP_LABEL_API_BASE=" + srv.URL, "OPENAI_API_KEY=test-key"}
	in, kafkaPort := startServeForJobs(t, env...)
	key := in.newUser("viewer-labels", false)
	startWorkerWith(t, in, kafkaPort, "lw-web", env...)
	id := in.importTraces(key, "stash", `{"id":"inv-web","steps":[{"role":"user","content":"find invoice 7"},`+
		`{"role":"assistant","content":"","tool_name":"search","tool_input":{"q":"7"},"tool_call_id":"c1"},`+
		`{"role":"tool","content":"invoice 7: paid","tool_name":"search","tool_call_id":"c1"},`+
		`{"role":"assistant","content":"Invoice 7 is paid."}]}`)[0]
	require.Eventually(t, func() bool { return in.labeling(t, key, id).Labeling.State == "labeled" }, time.Minute, 200*time.Millisecond)

	// A model trained on the trace (one trace is too few: it fails, and is
	// still the model trained on it); another trace of the account is in
	// no model's selection.
	other := in.importTraces(key, "stash", `{"id":"inv-other","steps":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]}`)[0]
	r := in.do("POST", "/api/v1/rm/reward-models", key, map[string]any{"name": "invoices", "trace_ids": []string{id}, "base_model": filepath.Join(t.TempDir(), "no-base")})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	modelID := r.JSON(t)["id"].(string)
	in.waitModel(t, key, modelID, "failed", "succeeded")
	models := func(trace string) []any {
		d := in.do("GET", "/api/v1/rm/traces/"+trace, key, nil)
		require.Equal(t, http.StatusOK, d.Status, string(d.Body))
		return d.JSON(t)["reward_models"].([]any)
	}
	got := models(id)
	require.Len(t, got, 1)
	require.Equal(t, map[string]any{"id": modelID, "name": "invoices", "status": in.do("GET", "/api/v1/rm/reward-models/"+modelID, key, nil).JSON(t)["status"]}, got[0])
	require.Empty(t, models(other))

	followUp.Store(true)
	require.Equal(t, 1, runSpec(t, webDir, "automatic labels", "auto-labels.spec.ts", in.url, key, "CRITIC_E2E_AUTO_LABELED_TRACE="+id))
	require.Equal(t, []string{"user/follow_up", "agent/tool_call", "", "agent/answer"}, in.stepLabels(t, key, id))
}

// stepLabels is each step's metadata.label on GET /traces/{id} as
// "actor/kind" (a user label's intent, an agent label's type), "" for none.
func (in *instance) stepLabels(t *testing.T, key, id string) []string {
	t.Helper()
	d := in.labeledDetail(t, key, id)
	out := make([]string, len(d.Steps))
	for i, s := range d.Steps {
		l, ok := s.Metadata["label"].(map[string]any)
		if !ok {
			continue
		}
		kind := l["type"]
		if l["actor"] == "user" {
			kind = l["intent"]
		}
		out[i] = fmt.Sprintf("%v/%v", l["actor"], kind)
	}
	return out
}

// TestLabelingOffSaysWhatToSet: without a step-label model, the trace says
// where labels come from and the retry names the variable.
func TestLabelingOffSaysWhatToSet(t *testing.T) {
	in := startServe(t)
	key := in.newUser("nolabels", false)
	id := in.importTraces(key, "stash", `{"steps":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]}`)[0]
	v := in.labeling(t, key, id)
	require.Equal(t, "unlabeled", v.Labeling.State)
	require.Nil(t, v.Labeling.Model)
	require.Contains(t, *v.Labeling.Reason, "CRITIC_STEP_LABEL_MODEL")
	r := in.do("POST", "/api/v1/rm/traces/"+id+"/labeling/retry", key, nil)
	require.Equal(t, http.StatusServiceUnavailable, r.Status)
	require.Contains(t, string(r.Body), "CRITIC_STEP_LABEL_MODEL")
}
