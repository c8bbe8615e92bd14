package e2e

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/platform/pg/pgtest"
)

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// jobsEnv starts `critic serve` with a fixed broker port and worker token, so
// a separate `critic worker` process can join.
func startServeForJobs(t testing.TB, extra ...string) (*instance, int) {
	port := freePort(t)
	in := startServe(t, append([]string{fmt.Sprintf("CRITIC_KAFKA_PORT=%d", port), "CRITIC_WORKER_TOKEN=e2e-worker-token"}, extra...)...)
	return in, port
}

// startWorker runs `critic worker` against the instance; the returned command
// can be killed to simulate a crash.
func startWorker(t testing.TB, in *instance, kafkaPort int, id string) *exec.Cmd {
	cmd := exec.Command(in.bin, "worker")
	cmd.Env = append(os.Environ(), "CRITIC_API_URL="+in.url, "CRITIC_WORKER_TOKEN=e2e-worker-token",
		fmt.Sprintf("KAFKA_BROKERS=127.0.0.1:%d", kafkaPort), "BLOB_URL=file://"+filepath.Join(in.dataDir, "blobs"),
		"CRITIC_DATA_DIR="+t.TempDir(), "CRITIC_WORKER_ID="+id, "DATABASE_URL=", "ANTHROPIC_API_KEY=", "OPENAI_API_KEY=")
	cmd.Stdout = &lockedWriter{mu: &in.logMu, w: in.logs}
	cmd.Stderr = &lockedWriter{mu: &in.logMu, w: in.logs}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_, _ = cmd.Process.Wait()
		}
	})
	return cmd
}

// tinyBase writes a tiny random Qwen3 base model with the test tokenizer.
func tinyBase(t testing.TB, in *instance) string { return sizedBase(t, in, "32", "1") }

// The tests' base models are written under the temporary directory, which
// every process they start (inheriting this environment) allows as a
// model root, as an operator would with CRITIC_MODEL_ROOTS.
func init() { os.Setenv("CRITIC_MODEL_ROOTS", os.TempDir()) }

// sizedBase writes a random Qwen3 base of the given hidden size and layers.
func sizedBase(t testing.TB, in *instance, hidden, layers string) string {
	out := filepath.Join(t.TempDir(), "base")
	tok := filepath.Join(pgtest.ModuleRoot(t), "gpuworker", "testdata", "tinytok")
	o, err := in.cli("model", "init", "--arch", "qwen3", "--hidden", hidden, "--layers", layers, "--heads", "2", "--kv-heads", "1",
		"--head-dim", "16", "--intermediate", "64", "--tokenizer", tok, "--out", out)
	require.NoError(t, err, o)
	return out
}

// ratedTraces imports four traces and rates them: two good, two bad, with
// step ratings on assistant actions (responses and tool calls).
func ratedTraces(t testing.TB, in *instance, key string) []string {
	var lines []string
	for i := range 4 {
		good := i%2 == 0
		answer := map[bool]string{true: "Your order %d was delivered; I started the refund within policy.", false: "Sure! Refund issued for %d, no questions asked."}[good]
		lines = append(lines, fmt.Sprintf(`{"id":"rm-%d","steps":[{"role":"system","content":"Refunds within 30 days."},`+
			`{"role":"user","content":"Refund order %d please"},`+
			`{"role":"assistant","content":"","tool_name":"lookup_order","tool_input":{"order_id":"%d"},"tool_call_id":"c%d"},`+
			`{"role":"tool","content":"{\"days\": %d}","tool_name":"lookup_order","tool_call_id":"c%d"},`+
			`{"role":"assistant","content":"%s"}]}`, i, i, i, i, 10+i, i, fmt.Sprintf(answer, i)))
	}
	ids := in.importTraces(key, "stash", strings.Join(lines, "\n"))
	for i, id := range ids {
		d := in.getTrace(t, key, id)
		rating := map[bool]int{true: 1, false: -1}[i%2 == 0]
		for _, body := range []map[string]any{
			{"rating": rating},
			{"step_id": d.Steps[4]["id"], "rating": rating, "comment": "final answer"},
			{"step_id": d.Steps[2]["id"], "rating": rating},
		} {
			r := in.do("POST", "/api/v1/rm/traces/"+id+"/annotations", key, body)
			require.Equal(t, http.StatusOK, r.Status, string(r.Body))
		}
	}
	return ids
}

func (in *instance) waitModel(t testing.TB, key, id string, want ...string) map[string]any {
	deadline := time.Now().Add(3 * time.Minute)
	for {
		r := in.do("GET", "/api/v1/rm/reward-models/"+id, key, nil)
		if r.Status == http.StatusNotFound && time.Now().Before(deadline) {
			// The read model may lag a request accepted while the broker was down.
			time.Sleep(200 * time.Millisecond)
			continue
		}
		require.Equal(t, http.StatusOK, r.Status, string(r.Body))
		m := r.JSON(t)
		for _, w := range want {
			if m["status"] == w {
				return m
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("model %s stayed %v (want %v):\n%s", id, m["status"], want, in.logText())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestRewardModelEndToEnd(t *testing.T) {
	// The scores as training and explicit requests leave them: background
	// scoring (which would rescore the re-imported trace) has its own test.
	in, kafkaPort := startServeForJobs(t, "CRITIC_BACKGROUND_SCORING=off")
	key := in.newUser("trainer", false)
	other := in.newUser("stranger", false)
	ids := ratedTraces(t, in, key)
	base := tinyBase(t, in)
	startWorker(t, in, kafkaPort, "w1")

	// Bad requests: nothing queued.
	require.Equal(t, http.StatusUnprocessableEntity, in.do("POST", "/api/v1/rm/reward-models", key,
		map[string]any{"name": "x", "trace_ids": ids, "compute": "modal"}).Status)
	r := in.do("POST", "/api/v1/rm/reward-models", key, map[string]any{"name": "x", "trace_ids": []string{ids[0], "00000000-0000-0000-0000-00000000dead"}})
	require.Equal(t, http.StatusNotFound, r.Status)
	require.Contains(t, r.JSON(t)["detail"], "00000000-0000-0000-0000-00000000dead")
	require.Equal(t, http.StatusNotFound, in.do("POST", "/api/v1/rm/reward-models", other, map[string]any{"name": "x", "trace_ids": ids}).Status)
	require.Equal(t, http.StatusUnprocessableEntity, in.do("POST", "/api/v1/rm/reward-models", key, map[string]any{"name": "x", "trace_ids": []string{}}).Status)

	r = in.do("POST", "/api/v1/rm/reward-models", key, map[string]any{"name": "refunds-v1", "trace_ids": ids, "base_model": base, "epochs": 2})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	m := r.JSON(t)
	require.Equal(t, "queued", m["status"])
	for _, k := range []string{"id", "name", "base_model", "compute", "epochs", "max_pairs", "trace_count", "status", "num_pairs", "metrics", "error", "created_at", "started_at", "finished_at"} {
		require.Contains(t, m, k)
	}
	require.Equal(t, float64(4), m["trace_count"])
	require.Equal(t, float64(4000), m["max_pairs"])
	id := m["id"].(string)

	m = in.waitModel(t, key, id, "succeeded", "failed")
	require.Equal(t, "succeeded", m["status"], "error: %v\n%s", m["error"], in.logText())
	metrics := m["metrics"].(map[string]any)
	for _, k := range []string{"train_pairs", "eval_pairs", "eval_accuracy", "eval_split", "excluded_cross_trace_pairs", "action_scoring_version",
		"action_train_pairs", "action_eval_pairs", "action_eval_accuracy", "tool_eval_pairs", "tool_eval_accuracy", "final_loss", "epochs", "device", "seconds"} {
		require.Contains(t, metrics, k)
	}
	require.Equal(t, "trace", metrics["eval_split"])
	require.Equal(t, float64(2), metrics["epochs"])
	require.Equal(t, "cpu", metrics["device"])
	require.Equal(t, float64(1), metrics["action_scoring_version"])
	require.Greater(t, m["num_pairs"].(float64), float64(2))
	require.NotNil(t, m["started_at"])
	require.NotNil(t, m["finished_at"])
	require.ElementsMatch(t, toAny(ids), m["trace_ids"])

	// Every trace has a score from this model; actions have credit in [-1, 1].
	for _, tid := range ids {
		d := in.getTrace(t, key, tid)
		require.Len(t, d.Scores, 1)
		sc := d.Scores[0].(map[string]any)
		require.Equal(t, id, sc["reward_model_id"])
		require.Equal(t, "refunds-v1", sc["reward_model_name"])
		require.Len(t, d.ActionScores, 2, "the tool call and the final answer")
		for _, a := range d.ActionScores {
			c := a.(map[string]any)["credit"].(float64)
			require.True(t, c >= -1 && c <= 1)
		}
	}
	list := in.do("GET", "/api/v1/rm/traces", key, nil).JSON(t)
	require.NotNil(t, list["traces"].([]any)[0].(map[string]any)["latest_score"])
	require.Len(t, in.do("GET", "/api/v1/rm/reward-models", key, nil).JSONList(t), 1)

	// The weights: a signed URL that needs no key and expires.
	require.Equal(t, http.StatusNotFound, in.do("GET", "/api/v1/rm/reward-models/"+id+"/weights", other, nil).Status)
	w := in.do("GET", "/api/v1/rm/reward-models/"+id+"/weights", key, nil)
	require.Equal(t, http.StatusOK, w.Status, string(w.Body))
	url := w.JSON(t)["url"].(string)
	resp, err := http.Get(url)
	require.NoError(t, err)
	files := untarNames(t, resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	for _, f := range []string{"reward-model/config.json", "reward-model/model.safetensors", "reward-model/tokenizer.json", "reward-model/reward_stats.json", "reward-model/action_reward_stats.json"} {
		require.Contains(t, files, f)
	}
	tampered := strings.Replace(url, "sig=", "sig=0", 1)
	resp, err = http.Get(tampered)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode)

	// Retry is only for failed models.
	require.Equal(t, http.StatusConflict, in.do("POST", "/api/v1/rm/reward-models/"+id+"/retry", key, nil).Status)

	// Scoring a trace on request: completed scores for the same revision come back at once.
	sr := in.do("POST", "/api/v1/rm/traces/"+ids[0]+"/score", key, map[string]any{"reward_model_id": id})
	require.Equal(t, http.StatusAccepted, sr.Status, string(sr.Body))
	run := sr.JSON(t)
	deadline := time.Now().Add(time.Minute)
	for run["status"] != "succeeded" && run["status"] != "failed" && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		d := in.getTrace(t, key, ids[0])
		require.Len(t, d.ScoringRuns, 1)
		run = d.ScoringRuns[0].(map[string]any)
	}
	require.Equal(t, "succeeded", run["status"], "%v", run["error"])
	again := in.do("POST", "/api/v1/rm/traces/"+ids[0]+"/score", key, map[string]any{"reward_model_id": id}).JSON(t)
	require.Equal(t, run["id"], again["id"], "same revision and checkpoint: the completed run")
	require.Equal(t, http.StatusNotFound, in.do("POST", "/api/v1/rm/traces/"+ids[0]+"/score", other, map[string]any{"reward_model_id": id}).Status)

	// Reimporting a trace drops its old scores.
	in.importTraces(key, "stash", `{"id":"rm-0","steps":[{"role":"user","content":"Refund order 0"},{"role":"assistant","content":"Done."}]}`)
	d := in.getTrace(t, key, ids[0])
	require.Empty(t, d.Scores)
	require.Empty(t, d.ActionScores)

	// Audit: each pair's annotations, and the dataset equals a rebuild from the log.
	out, err := in.cli("audit", "model", id)
	require.NoError(t, err, out)
	require.Contains(t, out, "OK: the stored dataset equals the one rebuilt from the log")
	require.Regexp(t, `annotation \S+ by trainer \(member [0-9a-f-]{36}\) at `, out, "each annotation names its member")

	// Too few pairs: failed with an actionable error, before any model is loaded.
	r = in.do("POST", "/api/v1/rm/reward-models", key, map[string]any{"name": "one-trace", "trace_ids": ids[1:2], "base_model": base})
	require.Equal(t, http.StatusOK, r.Status)
	few := in.waitModel(t, key, r.JSON(t)["id"].(string), "failed")
	require.Contains(t, few["error"], "at least 2 preference pairs from at least 2 source traces")
	rr := in.do("POST", "/api/v1/rm/reward-models/"+r.JSON(t)["id"].(string)+"/retry", key, nil)
	require.Equal(t, http.StatusAccepted, rr.Status)
	require.Equal(t, "queued", rr.JSON(t)["status"])

	// SQL sees the scores too (the snapshot is eventually consistent: poll).
	// rm-0 was re-imported above, so its scores are gone there as well.
	var rows []any
	require.Eventually(t, func() bool {
		q := in.do("POST", "/api/v1/rm/query", key, map[string]any{"sql": `SELECT (SELECT count(*) FROM scores WHERE reward_model_id = '` + id +
			`'), (SELECT count(*) FROM action_scores WHERE reward_model_id = '` + id + `'), (SELECT min(step_index) FROM action_scores)`})
		if q.Status != http.StatusOK {
			rows = []any{string(q.Body)}
			return false
		}
		rows = q.JSON(t)["rows"].([]any)
		return rows[0].([]any)[0] == float64(3)
	}, 20*time.Second, 100*time.Millisecond, "the snapshot never showed the scores")
	// 3 traces × (tool call + answer); the lowest action is the tool call at step 2.
	require.Equal(t, []any{float64(3), float64(6), float64(2)}, rows[0])

	// Deleting a training trace erases it (issue 37): the model keeps
	// scoring, and its page and audit say one trace was erased since.
	require.Equal(t, http.StatusNoContent, in.do("DELETE", "/api/v1/rm/traces/"+ids[3], key, nil).Status)
	md := in.do("GET", "/api/v1/rm/reward-models/"+id, key, nil).JSON(t)
	require.Equal(t, float64(1), md["erased_traces"])
	require.Equal(t, "Trained on 1 trace since erased. Weights cannot unlearn data they were trained on.", md["erased_notice"])
	sr = in.do("POST", "/api/v1/rm/traces/"+ids[1]+"/score", key, map[string]any{"reward_model_id": id})
	require.Contains(t, []int{http.StatusOK, http.StatusAccepted}, sr.Status, string(sr.Body))
	require.NotEqual(t, "failed", sr.JSON(t)["status"], "the model still scores")
	out, err = in.cli("audit", "model", id)
	require.NoError(t, err, out)
	require.Contains(t, out, "Trained on 1 trace since erased.")
	// Its stored dataset quoted the erased trace, so it is gone: the
	// model's pairs export says why.
	ex := in.do("GET", "/api/v1/rm/export/pairs?reward_model_id="+id, key, nil)
	require.Equal(t, http.StatusConflict, ex.Status, string(ex.Body))
	require.Contains(t, string(ex.Body), "dataset_erased")
}

func toAny(xs []string) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

func (r response) JSONList(t testing.TB) []any {
	var v []any
	require.NoError(t, json.Unmarshal(r.Body, &v), string(r.Body))
	return v
}

func untarNames(t *testing.T, rd io.Reader) []string {
	zr, err := gzip.NewReader(rd)
	require.NoError(t, err)
	tr := tar.NewReader(zr)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names
		}
		require.NoError(t, err)
		names = append(names, strings.TrimPrefix(h.Name, "./"))
	}
}
