package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain/events"
)

// scoredBy says whether a trace has the model's trace score and action
// credit at its current revision.
func (in *instance) scoredBy(t *testing.T, key, traceID, modelID string) bool {
	d := in.getTrace(t, key, traceID)
	trace := false
	for _, s := range d.Scores {
		if s.(map[string]any)["reward_model_id"] == modelID {
			trace = true
		}
	}
	actions := 0
	for _, a := range d.ActionScores {
		if a.(map[string]any)["reward_model_id"] == modelID {
			actions++
		}
	}
	return trace && actions > 0
}

func supportTraces(prefix string, n int, extra string) string {
	var lines []string
	for i := range n {
		lines = append(lines, fmt.Sprintf(`{"id":"%s-%d","steps":[{"role":"user","content":"Refund order %d please"},`+
			`{"role":"assistant","content":"","tool_name":"lookup_order","tool_input":{"order_id":"%d"},"tool_call_id":"c%d"},`+
			`{"role":"tool","content":"{\"days\": %d}","tool_name":"lookup_order","tool_call_id":"c%d"},`+
			`{"role":"assistant","content":"Order %d: refund started within policy.%s"}]}`, prefix, i, i, i, i, 5+i, i, i, extra))
	}
	return strings.Join(lines, "\n")
}

// Spec 001 "Learned action credit" with the real worker: once the model is
// ready, ten new traces and two re-imported (changed) ones get trace scores
// and action credit without any request to score them; a paused model
// scores nothing new in the background while an explicit score still runs,
// and resuming scores what waited.
func TestBackgroundScoringEndToEnd(t *testing.T) {
	in, kafkaPort := startServeForJobs(t, "CRITIC_SCORING_DEBOUNCE=1s")
	key := in.newUser("owner", false)
	other := in.newUser("stranger", false)
	rated := ratedTraces(t, in, key)
	base := tinyBase(t, in)
	startWorker(t, in, kafkaPort, "w1")
	r := in.do("POST", "/api/v1/rm/reward-models", key, map[string]any{"name": "bg", "trace_ids": rated, "base_model": base, "epochs": 1})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	modelID := r.JSON(t)["id"].(string)
	m := in.waitModel(t, key, modelID, "succeeded", "failed")
	require.Equal(t, "succeeded", m["status"], "error: %v\n%s", m["error"], in.logText())
	require.Equal(t, false, m["background_scoring"].(map[string]any)["paused"])

	fresh := in.importTraces(key, "stash", supportTraces("bg", 10, ""))
	// Two of the rated traces change: a new revision each, whose training
	// scores are gone.
	changed := in.importTraces(key, "stash", `{"id":"rm-1","steps":[{"role":"user","content":"Refund order 1 please"},{"role":"assistant","content":"Refund started."}]}`+"\n"+
		`{"id":"rm-2","steps":[{"role":"user","content":"Refund order 2 please"},{"role":"assistant","content":"Order 2 refunded."},{"role":"user","content":"thanks"},{"role":"assistant","content":"You are welcome."}]}`)
	require.ElementsMatch(t, rated[1:3], changed)
	for _, id := range changed {
		require.False(t, in.scoredBy(t, key, id, modelID), "a changed trace's old scores are dropped")
	}
	all := append(append([]string{}, fresh...), changed...)
	deadline := time.Now().Add(3 * time.Minute)
	for {
		pending := 0
		for _, id := range all {
			if !in.scoredBy(t, key, id, modelID) {
				pending++
			}
		}
		if pending == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d traces never got background scores:\n%s", pending, len(all), in.logText())
		}
		time.Sleep(300 * time.Millisecond)
	}
	for _, id := range all {
		d := in.getTrace(t, key, id)
		require.NotEmpty(t, d.ScoringRuns, "scored by a run of background scoring, not by training")
		run := d.ScoringRuns[0].(map[string]any)
		require.Equal(t, "succeeded", run["status"])
		for _, a := range d.ActionScores {
			c := a.(map[string]any)["credit"].(float64)
			require.True(t, c >= -1 && c <= 1)
		}
	}
	bg := in.do("GET", "/api/v1/rm/reward-models/"+modelID, key, nil).JSON(t)["background_scoring"].(map[string]any)
	require.Equal(t, map[string]any{"paused": false, "scored": float64(14), "queued": float64(0), "running": float64(0), "failed": float64(0)}, bg,
		"the four rated traces (two rescored) and the ten new ones")

	// The model page shows the counts; pausing and resuming there is the
	// API's (web/e2e/background-scoring.spec.ts).
	if _, err := os.Stat(chromiumPath()); err == nil {
		runSpec(t, requireBrowser(t), "background scoring", "background-scoring.spec.ts", in.url, key, "CRITIC_E2E_BG_MODEL="+modelID)
		m = in.do("GET", "/api/v1/rm/reward-models/"+modelID, key, nil).JSON(t)
		require.Equal(t, false, m["background_scoring"].(map[string]any)["paused"], "paused and resumed in the browser")
		var toggles int
		require.NoError(t, in.pool.QueryRow(context.Background(), `SELECT count(*) FROM events WHERE stream = $1 AND type IN ($2, $3)`,
			"reward_model/"+modelID, events.RewardModelScoringPaused, events.RewardModelScoringResumed).Scan(&toggles))
		require.Equal(t, 2, toggles, "one pause and one resume")
	}

	// Pause: only the owner, only with paused.
	require.Equal(t, http.StatusNotFound, in.do("PUT", "/api/v1/rm/reward-models/"+modelID+"/background-scoring", other, map[string]any{"paused": true}).Status)
	require.Equal(t, http.StatusUnprocessableEntity, in.do("PUT", "/api/v1/rm/reward-models/"+modelID+"/background-scoring", key, map[string]any{}).Status)
	p := in.do("PUT", "/api/v1/rm/reward-models/"+modelID+"/background-scoring", key, map[string]any{"paused": true})
	require.Equal(t, http.StatusOK, p.Status, string(p.Body))
	require.Equal(t, true, p.JSON(t)["paused"])
	require.Equal(t, float64(14), p.JSON(t)["scored"])

	later := in.importTraces(key, "stash", supportTraces("paused", 2, " Anything else?"))
	// An explicit score of one of them runs while paused.
	sr := in.do("POST", "/api/v1/rm/traces/"+later[1]+"/score", key, map[string]any{"reward_model_id": modelID})
	require.Equal(t, http.StatusAccepted, sr.Status, string(sr.Body))
	require.Eventually(t, func() bool { return in.scoredBy(t, key, later[1], modelID) }, time.Minute, 200*time.Millisecond,
		"an explicit score runs while background scoring is paused")
	// The other stays unscored for several debounce periods and ticks.
	time.Sleep(5 * time.Second)
	d := in.getTrace(t, key, later[0])
	require.Empty(t, d.ScoringRuns, "a paused model requests no background scoring")
	require.False(t, in.scoredBy(t, key, later[0], modelID))

	p = in.do("PUT", "/api/v1/rm/reward-models/"+modelID+"/background-scoring", key, map[string]any{"paused": false})
	require.Equal(t, http.StatusOK, p.Status, string(p.Body))
	require.Equal(t, false, p.JSON(t)["paused"])
	require.Eventually(t, func() bool { return in.scoredBy(t, key, later[0], modelID) }, 2*time.Minute, 300*time.Millisecond,
		"resumed: the trace that waited is scored")
}
