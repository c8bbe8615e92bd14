package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/gpuworker/gepa"
	"github.com/criticml/critic/platform/llm/llmtest"
	criticv1 "github.com/criticml/critic/schema/gen/critic/v1"
	"github.com/criticml/critic/schema/gen/critic/v1/criticv1connect"
)

// gepaRows is rm_gepa_runs as JSON rows, in id order.
func gepaRows(t *testing.T, in *instance) []string {
	rows, err := in.pool.Query(context.Background(), "SELECT row_to_json(x)::text FROM (SELECT * FROM rm_gepa_runs ORDER BY id) x")
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		out = append(out, s)
	}
	require.NoError(t, rows.Err())
	require.NotEmpty(t, out)
	return out
}

// waitGepa polls GET /gepa-runs/{id} until its status is one of want.
func (in *instance) waitGepa(t *testing.T, key, id string, want ...string) map[string]any {
	deadline := time.Now().Add(3 * time.Minute)
	for {
		r := in.do("GET", "/api/v1/rm/gepa-runs/"+id, key, nil)
		require.Equal(t, http.StatusOK, r.Status, string(r.Body))
		run := r.JSON(t)
		for _, w := range want {
			if run["status"] == w {
				return run
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("GEPA run %s stayed %v:\n%s", id, run["status"], in.logText())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// A user's GEPA run over HTTP, like a user: checks on the request, a queued
// run with null skill fields and no skill to download, then — run by a
// `critic worker` with scripted task and reflection models — a succeeded run
// whose skill downloads as a SKILL.md attachment with valid frontmatter.
func TestGepaRunEndToEnd(t *testing.T) {
	task, refl := llmtest.New(t), llmtest.New(t)
	task.Handle(func(r llmtest.Request) llmtest.Reply {
		if strings.Contains(r.Messages[0].Content, "look the order up") {
			return llmtest.Reply{Content: "Your order was delivered; I started the refund within policy."}
		}
		return llmtest.Reply{Content: "Sure! Refund issued, no questions asked."}
	})
	refl.Handle(func(r llmtest.Request) llmtest.Reply {
		p := r.Last()
		if strings.Contains(p, "You are naming a skill") {
			return llmtest.Reply{Content: "<name>refund-policy</name>\n<description>Use when a customer asks for a refund.</description>"}
		}
		n := strings.Count(p, "<rejected ")
		return llmtest.Reply{Content: "<new_skill_body>\nBefore promising a refund, look the order up with lookup_order.\n" +
			strings.Repeat("Check the delivery date.\n", n) + "</new_skill_body>"}
	})
	in, kafkaPort := startServeForJobs(t)
	key := in.newUser("skills", false)
	other := in.newUser("stranger", false)
	ids := ratedTraces(t, in, key)
	base := tinyBase(t, in)

	r := in.do("POST", "/api/v1/rm/reward-models", key, map[string]any{"name": "refunds", "trace_ids": ids, "base_model": base, "epochs": 2})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	modelID := r.JSON(t)["id"].(string)

	// No worker yet: the model is queued, so GEPA is a 422.
	r = in.do("POST", "/api/v1/rm/gepa-runs", key, map[string]any{"reward_model_id": modelID})
	require.Equal(t, http.StatusUnprocessableEntity, r.Status, string(r.Body))
	require.Contains(t, string(r.Body), "has not succeeded")

	w1 := startWorkerWith(t, in, kafkaPort, "w1")
	m := in.waitModel(t, key, modelID, "succeeded", "failed")
	require.Equal(t, "succeeded", m["status"], "%v", m["error"])
	// w1 stops the way a deployment stops it (SIGTERM: it leaves the consumer
	// group). A kill -9 leaves its members in the embedded broker's group
	// until their session expires, and kfake has been seen to keep the runs'
	// partitions with the dead member for minutes (platform/bus/
	// KFAKE_JOIN_EXPIRY.md); a worker lost mid-run is the next test's subject.
	require.NoError(t, w1.Process.Signal(syscall.SIGTERM))
	_, _ = w1.Process.Wait()

	require.Equal(t, http.StatusNotFound, in.do("POST", "/api/v1/rm/gepa-runs", other, map[string]any{"reward_model_id": modelID}).Status)
	require.Equal(t, http.StatusUnprocessableEntity, in.do("POST", "/api/v1/rm/gepa-runs", key,
		map[string]any{"reward_model_id": modelID, "seed": 3}).Status, "unknown fields are 422")
	require.Equal(t, http.StatusUnprocessableEntity, in.do("POST", "/api/v1/rm/gepa-runs", key,
		map[string]any{"reward_model_id": modelID, "max_metric_calls": 0}).Status)

	// Defaults.
	r = in.do("POST", "/api/v1/rm/gepa-runs", key, map[string]any{"reward_model_id": modelID})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	def := r.JSON(t)
	require.Equal(t, "anthropic/claude-haiku-4-5", def["task_model"])
	require.Equal(t, "anthropic/claude-sonnet-5", def["reflection_model"])
	require.Equal(t, float64(40), def["max_metric_calls"])
	require.Nil(t, def["task_api_base"])

	r = in.do("POST", "/api/v1/rm/gepa-runs", key, map[string]any{"reward_model_id": modelID, "task_model": "openai/agent",
		"task_api_base": task.URL, "reflection_model": "openai/reflector", "max_metric_calls": 12})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	run := r.JSON(t)
	for _, k := range []string{"id", "reward_model_id", "status", "skill_name", "skill_description", "best_skill", "best_score",
		"seed_skill", "seed_score", "candidates", "holdout", "error", "created_at", "started_at", "finished_at"} {
		require.Contains(t, run, k)
	}
	require.Equal(t, "queued", run["status"])
	require.Nil(t, run["skill_name"])
	require.Nil(t, run["skill_description"])
	require.Equal(t, float64(4), run["examples"])
	id := run["id"].(string)
	require.Equal(t, http.StatusNotFound, in.do("GET", "/api/v1/rm/gepa-runs/"+id+"/skill", key, nil).Status, "no skill until it succeeds")
	require.Equal(t, http.StatusNotFound, in.do("GET", "/api/v1/rm/gepa-runs/"+id, other, nil).Status)

	// The default run fails: no Anthropic key in the worker's environment.
	startWorkerWith(t, in, kafkaPort, "w2", "OPENAI_BASE_URL="+refl.URL, "CRITIC_ALLOWED_API_BASES="+task.URL)
	done := in.waitGepa(t, key, id, "succeeded", "failed")
	require.Equal(t, "succeeded", done["status"], "%v\n%s", done["error"], in.logText())
	require.Equal(t, "refund-policy", done["skill_name"])
	require.Equal(t, "Use when a customer asks for a refund.", done["skill_description"])
	require.LessOrEqual(t, done["metric_calls"].(float64), float64(12))
	require.Equal(t, int(done["metric_calls"].(float64)), task.Calls())
	require.NotEmpty(t, done["candidates"])
	require.Nil(t, done["holdout"], "4 examples are too few to hold any out")
	failed := in.waitGepa(t, key, def["id"].(string), "succeeded", "failed")
	require.Equal(t, "failed", failed["status"])
	require.Contains(t, failed["error"], "ANTHROPIC_API_KEY")

	req, _ := http.NewRequest("GET", in.url+"/api/v1/rm/gepa-runs/"+id+"/skill", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/markdown; charset=utf-8", resp.Header.Get("Content-Type"))
	require.Equal(t, `attachment; filename="SKILL.md"`, resp.Header.Get("Content-Disposition"))
	require.Equal(t, done["best_skill"], string(body))
	ident, _, err := gepa.ParseFrontmatter(string(body))
	require.NoError(t, err)
	require.Equal(t, "refund-policy", ident.Name)

	// Connect answers the same skill and run.
	gc := criticv1connect.NewGepaServiceClient(http.DefaultClient, in.url)
	sreq := connect.NewRequest(&criticv1.GetGepaSkillRequest{GepaRunId: id})
	sreq.Header().Set("Authorization", "Bearer "+key)
	skill, err := gc.GetGepaSkill(context.Background(), sreq)
	require.NoError(t, err)
	require.Equal(t, string(body), skill.Msg.SkillMd)
	greq := connect.NewRequest(&criticv1.GetGepaRunRequest{GepaRunId: id})
	greq.Header().Set("Authorization", "Bearer "+key)
	got, err := gc.GetGepaRun(context.Background(), greq)
	require.NoError(t, err)
	require.Equal(t, "succeeded", got.Msg.GepaRun.Status)
	require.Equal(t, done["best_score"], got.Msg.GepaRun.GetBestScore())
	require.Len(t, got.Msg.GepaRun.Candidates, len(done["candidates"].([]any)))

	list := in.do("GET", "/api/v1/rm/gepa-runs", key, nil).JSONList(t)
	require.Len(t, list, 2)
	require.Empty(t, in.do("GET", "/api/v1/rm/gepa-runs", other, nil).JSONList(t))

	// Replay rebuilds the same runs from the log, calling no model.
	calls := task.Calls() + refl.Calls()
	before, rows := dumpReadModel(t, in), gepaRows(t, in)
	listed := in.do("GET", "/api/v1/rm/gepa-runs", key, nil).Body
	out, err := in.cli("replay", "readmodel")
	require.NoError(t, err, out)
	require.Equal(t, before, dumpReadModel(t, in))
	require.Equal(t, rows, gepaRows(t, in), "rm_gepa_runs rebuilt row for row")
	require.JSONEq(t, string(listed), string(in.do("GET", "/api/v1/rm/gepa-runs", key, nil).Body))
	require.Equal(t, calls, task.Calls()+refl.Calls(), "replay never calls a model")
}

// A worker killed mid-run loses the run on lease expiry (after the run
// showed its progress): it goes back to the queue by itself
// (gepa_run.requeued.v1, reason lease_expired, naming the worker), and
// another worker runs it to success — no new run needed.
func TestGepaWorkerKilledMidRunIsRetriedOnAnotherWorker(t *testing.T) {
	task, refl := llmtest.New(t), llmtest.New(t)
	task.Handle(func(r llmtest.Request) llmtest.Reply {
		return llmtest.Reply{Content: "Sure! Refund issued.", Delay: 700 * time.Millisecond} // slow enough to interrupt
	})
	refl.Handle(func(r llmtest.Request) llmtest.Reply {
		if strings.Contains(r.Last(), "You are naming a skill") {
			return llmtest.Reply{Content: "<name>refunds</name><description>Use for refunds.</description>"}
		}
		return llmtest.Reply{Content: "<new_skill_body>\nCheck the order. " + strings.Repeat("Again. ", strings.Count(r.Last(), "<rejected ")) + "\n</new_skill_body>"}
	})
	in, kafkaPort := startServeForJobs(t, "CRITIC_WORKER_LEASE=3s")
	key := in.newUser("gepa-faults", false)
	ids := ratedTraces(t, in, key)
	base := tinyBase(t, in)
	w1 := startWorkerWith(t, in, kafkaPort, "w1", "OPENAI_BASE_URL="+refl.URL, "CRITIC_ALLOWED_API_BASES="+task.URL)
	r := in.do("POST", "/api/v1/rm/reward-models", key, map[string]any{"name": "refunds", "trace_ids": ids, "base_model": base})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	modelID := r.JSON(t)["id"].(string)
	require.Equal(t, "succeeded", in.waitModel(t, key, modelID, "succeeded", "failed")["status"])

	body := map[string]any{"reward_model_id": modelID, "task_model": "openai/agent", "task_api_base": task.URL,
		"reflection_model": "openai/reflector", "max_metric_calls": 40}
	r = in.do("POST", "/api/v1/rm/gepa-runs", key, body)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	id := r.JSON(t)["id"].(string)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		run := in.do("GET", "/api/v1/rm/gepa-runs/"+id, key, nil).JSON(t)
		if p, ok := run["progress"].(map[string]any); ok && run["status"] == "running" && p["metric_calls"].(float64) > 0 {
			require.Equal(t, float64(40), p["max_metric_calls"])
			require.Nil(t, run["skill_name"], "no result while running")
			break
		}
		require.NotEqual(t, "succeeded", run["status"], "the run finished before it could be interrupted")
		require.True(t, time.Now().Before(deadline), "the run never showed progress: %v\n%s", run, in.logText())
		time.Sleep(100 * time.Millisecond)
	}
	require.NoError(t, w1.Process.Signal(syscall.SIGKILL))
	_, _ = w1.Process.Wait()
	var reason, worker string
	require.Eventually(t, func() bool {
		ps := in.openedWhere(t, "gepa_run.requeued.v1", "run_id", id) // gepa_run payloads are sealed
		if len(ps) == 0 {
			return false
		}
		reason, worker = fmt.Sprint(ps[0]["reason"]), fmt.Sprint(ps[0]["worker_id"])
		return true
	}, time.Minute, 100*time.Millisecond, "the lost run was never requeued\n%s", in.logText())
	require.Equal(t, "lease_expired", reason)
	require.Equal(t, "w1", worker)
	require.Eventually(t, func() bool { return in.do("GET", "/api/v1/rm/gepa-runs/"+id, key, nil).JSON(t)["status"] == "queued" },
		time.Minute, 100*time.Millisecond)

	startWorkerWith(t, in, kafkaPort, "w2", "OPENAI_BASE_URL="+refl.URL, "CRITIC_ALLOWED_API_BASES="+task.URL)
	again := in.waitGepa(t, key, id, "succeeded", "failed")
	require.Equal(t, "succeeded", again["status"], "%v", again["error"])
	var holder string
	require.NoError(t, in.pool.QueryRow(context.Background(), `SELECT worker_id FROM rm_gepa_runs WHERE id = $1`, id).Scan(&holder))
	require.Equal(t, "w2", holder)
}
