package e2e

import (
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math"
	"net/http"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain/evaluator"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/gpuworker/grade/gradetest"
	"github.com/criticml/critic/gpuworker/label/labeltest"
	"github.com/criticml/critic/platform/llm/llmtest"
	"github.com/criticml/critic/platform/pg/pgtest"
	"github.com/criticml/critic/projections/readmodel"
)

// TestReplayEqualsTheLiveReadModel produces a log through the API (and the
// worker tier, with test servers as the model providers) that holds every
// event type declared in domain/events but those replayUnproduced names —
// accounts, keys issued and revoked, the reward-model switch, imports,
// re-imports, deletions, source names, OTLP spans, session sync,
// annotations added, edited and removed, criteria and their values,
// guidelines, reward models queued, running,
// succeeded, failed and retried, feedback extraction and its findings,
// heartbeats, trace and action scores, scoring runs that succeed and fail,
// titles, step labels and the grading model's quality checks, section
// summaries, GEPA runs, consent (by the API and on import), reviewed
// comparisons and a frozen shared-evaluator benchmark — then rebuilds the
// read model from the log and requires every read-model table (every rm_
// table in the database, which must all be in readmodel.Tables) to be
// non-empty and identical, row for row.
func TestReplayEqualsTheLiveReadModel(t *testing.T) {
	// The model calls of the worker tier: feedback, reviews, titles and
	// section summaries from one server, step labels from another (a
	// trace saying "broken request" fails its labeling), GEPA's task
	// and reflection models from two more.
	fast, labels, task, refl := llmtest.New(t), llmtest.New(t), llmtest.New(t), llmtest.New(t)
	fast.Handle(func(r llmtest.Request) llmtest.Reply {
		if r.SchemaName == "assessment" {
			return scriptedAssessor(r)
		}
		return scriptedClassifier(r)
	})
	labels.Handle(func(r llmtest.Request) llmtest.Reply {
		if id, _ := gradetest.Target(r); id != "" {
			return gradetest.Reply(r) // a quality check of an open step
		}
		if strings.Contains(r.Text(), "broken request") {
			return llmtest.Status(400)
		}
		return labeltest.Reply(r)
	})
	task.Handle(func(llmtest.Request) llmtest.Reply {
		return llmtest.Reply{Content: "Sure! Refund issued, no questions asked."}
	})
	refl.Handle(func(r llmtest.Request) llmtest.Reply {
		if strings.Contains(r.Last(), "You are naming a skill") {
			return llmtest.Reply{Content: "<name>refund-policy</name>\n<description>Use when a customer asks for a refund.</description>"}
		}
		return llmtest.Reply{Content: "<new_skill_body>\nLook the order up first.\n</new_skill_body>"}
	})
	llmEnv := []string{"CRITIC_FEEDBACK_MODEL=openai/scripted-classifier", "CRITIC_FEEDBACK_API_BASE=" + fast.URL, "OPENAI_API_KEY=test-key",
		"CRITIC_FAST_MODEL=openai/scripted-fast", "CRITIC_FAST_API_BASE=" + fast.URL,
		"CRITIC_STEP_LABEL_MODEL=openai/scripted-labeler", "CRITIC_STEP_LABEL_API_BASE=" + labels.URL,
		"CRITIC_GRADING_MODEL=openai/scripted-grader", "CRITIC_GRADING_API_BASE=" + labels.URL, "TYPESAFE_API_KEY=ts-key"}
	in, kafkaPort := startServeForJobs(t, append([]string{"CRITIC_WORKER_LEASE=60s", "CRITIC_SCORING_DEBOUNCE=1s"}, llmEnv...)...)
	key := in.newUser("replayer", false)
	// The sorting traces share a trace group on the benchmark side of the
	// shared evaluator's split (a fixed hash of owner and group), so their
	// reviewed comparisons freeze into a benchmark below.
	owner := in.do("GET", "/api/v1/rm/me", key, nil).JSON(t)["user_id"].(string)
	group := ""
	for i := 0; group == ""; i++ {
		if g := fmt.Sprintf("sorting-%d", i); evaluator.InBenchmark(owner + "/" + g) {
			group = g
		}
	}
	out, err := in.cli("users", "issue-key", "--name", "replayer", "--read-only-key")
	require.NoError(t, err, out)
	// A key issued, then revoked.
	out, err = in.cli("users", "issue-key", "--name", "replayer")
	require.NoError(t, err, out)
	out, err = in.cli("users", "revoke-key", keyRe.FindStringSubmatch(out)[1])
	require.NoError(t, err, out)
	for _, c := range []string{"disable-reward-models", "enable-reward-models"} {
		out, err := in.cli("users", c, "replayer")
		require.NoError(t, err, out)
	}
	// Members: one added by the CLI, one by the API who signs in through
	// their invitation and whose role changes before they are removed
	// (their keys revoked with them).
	out, err = in.cli("users", "add-member", "replayer", "rita")
	require.NoError(t, err, out)
	added := in.do("POST", "/api/v1/rm/members", key, map[string]any{"name": "vic", "role": "viewer"})
	require.Equal(t, http.StatusCreated, added.Status, string(added.Body))
	vic := added.JSON(t)["member"].(map[string]any)["id"].(string)
	// vic signs in through the one-time link (member.invited came with
	// member.added; accepting it is member.invitation_accepted and a key).
	_, token, _ := strings.Cut(added.JSON(t)["sign_in_url"].(string), "#invite=")
	accepted := in.do("POST", "/api/v1/rm/invitations/accept", "", map[string]any{"token": token})
	require.Equal(t, http.StatusOK, accepted.Status, string(accepted.Body))
	require.Equal(t, http.StatusOK, in.do("PATCH", "/api/v1/rm/members/"+vic, key, map[string]any{"role": "reviewer"}).Status)
	require.Equal(t, http.StatusNoContent, in.do("DELETE", "/api/v1/rm/members/"+vic+"?reason=left", key, nil).Status)

	// Team review: the account's review overlap, and an admin's final
	// judgment on one rated trace (rm_adjudications).
	require.Equal(t, http.StatusOK, in.do("PUT", "/api/v1/rm/review-overlap", key, map[string]any{"overlap": 2}).Status)
	// A retention period long enough to erase none of this test's traces.
	require.Equal(t, http.StatusOK, in.do("PUT", "/api/v1/rm/retention", key, map[string]any{"days": 3650}).Status)

	// Models: trained (scores, action scores), then a scoring run.
	ids := ratedTraces(t, in, key)
	adj := in.do("POST", "/api/v1/rm/traces/"+ids[0]+"/adjudications", key, map[string]any{"rating": 1, "reason": "the final answer is right"})
	require.Equal(t, http.StatusCreated, adj.Status, string(adj.Body))
	base := tinyBase(t, in)
	worker := startWorkerWith(t, in, kafkaPort, "w1", append(llmEnv, "OPENAI_BASE_URL="+refl.URL, "CRITIC_ALLOWED_API_BASES="+task.URL)...)
	r := in.do("POST", "/api/v1/rm/reward-models", key, map[string]any{"name": "good", "trace_ids": ids, "base_model": base, "epochs": 1})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	good := r.JSON(t)["id"].(string)
	require.Equal(t, "succeeded", in.waitModel(t, key, good, "succeeded", "failed")["status"], in.logText())
	sr := in.do("POST", "/api/v1/rm/traces/"+ids[0]+"/score", key, map[string]any{"reward_model_id": good})
	require.Equal(t, http.StatusAccepted, sr.Status, string(sr.Body))
	runID := sr.JSON(t)["id"].(string)
	require.Eventually(t, func() bool {
		var status string
		_ = in.pool.QueryRow(context.Background(), "SELECT status FROM rm_scoring_runs WHERE id = $1", runID).Scan(&status)
		return status == "succeeded"
	}, time.Minute, 100*time.Millisecond)
	// Background scoring: a new trace scored in a batch, then the model
	// paused, resumed and paused again (no batch starts while the log is
	// compared below).
	in.importTraces(key, "stash", `{"id":"bg-1","steps":[{"role":"user","content":"Refund order 9"},{"role":"assistant","content":"Refund started."}]}`)
	require.Eventually(t, func() bool {
		var n int
		_ = in.pool.QueryRow(context.Background(), "SELECT count(*) FROM rm_scoring_runs WHERE automatic AND status = 'succeeded'").Scan(&n)
		return n > 0
	}, time.Minute, 100*time.Millisecond, "a background batch scores the new trace")
	for _, paused := range []bool{true, false, true} {
		r := in.do("PUT", "/api/v1/rm/reward-models/"+good+"/background-scoring", key, map[string]any{"paused": paused})
		require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	}
	// Feedback extraction: a model trained on a reviewer's comment and a
	// user's reaction (findings recorded, extraction started, progressed
	// and finished).
	fb := in.importTraces(key, "stash", strings.Join([]string{
		`{"id":"sort-1","metadata":{"group":"` + group + `"},"steps":[{"role":"user","content":"Sort 3, 1, 2 ascending"},{"role":"assistant","content":"Sorted: 3, 2, 1."},{"role":"user","content":"No, that's the wrong order."}]}`,
		`{"id":"sort-2","metadata":{"group":"` + group + `"},"steps":[{"role":"user","content":"Sort a, c, b"},{"role":"assistant","content":"Sorted: a, b, c."},{"role":"user","content":"Thanks, perfect."}]}`,
		`{"id":"fx-1","title":"Currency","steps":[{"role":"user","content":"Convert 100"},{"role":"assistant","content":"That is 92 euros."}]}`,
	}, "\n"))
	fx := in.getTrace(t, key, fb[2])
	require.Equal(t, http.StatusOK, in.do("POST", "/api/v1/rm/traces/"+fb[2]+"/annotations", key, map[string]any{"step_id": fx.Steps[1]["id"],
		"comment": "It should have asked which currency first."}).Status)
	r = in.do("POST", "/api/v1/rm/reward-models", key, map[string]any{"name": "from-feedback", "trace_ids": fb, "base_model": base, "epochs": 1,
		"training_config": map[string]any{"annotation_source": "feedback", "input_version": 1}})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	if fbm := in.waitModel(t, key, r.JSON(t)["id"].(string), "succeeded", "failed"); fbm["status"] == "succeeded" {
		// No background batch of this model while the log is compared.
		r := in.do("PUT", "/api/v1/rm/reward-models/"+fbm["id"].(string)+"/background-scoring", key, map[string]any{"paused": true})
		require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	}
	// The shared evaluator: consent, reviewed comparisons, a benchmark, a
	// candidate trained by the worker, its release and automatic scoring.
	bootstrapEvaluator(t, in, key, base)
	// Consent through the API too (after the release, so the candidate's
	// data above stays what the bootstrap reviewed).
	for _, id := range fb {
		r := in.do("PUT", "/api/v1/rm/traces/"+id+"/contribution", key, map[string]any{"contribute": true})
		require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	}
	// Titles from the fast model.
	require.Eventually(t, func() bool { return in.getTrace(t, key, fb[0]).Title == "Sorting a short list" }, time.Minute, 200*time.Millisecond)

	// GEPA: a run that succeeds and one that fails (no Anthropic key).
	r = in.do("POST", "/api/v1/rm/gepa-runs", key, map[string]any{"reward_model_id": good, "task_model": "openai/agent",
		"task_api_base": task.URL, "reflection_model": "openai/reflector", "max_metric_calls": 12})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	gepaOK := r.JSON(t)["id"].(string)
	r = in.do("POST", "/api/v1/rm/gepa-runs", key, map[string]any{"reward_model_id": good})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	gepaFail := r.JSON(t)["id"].(string)
	require.Equal(t, "succeeded", in.waitGepa(t, key, gepaOK, "succeeded", "failed")["status"], in.logText())
	require.Equal(t, "failed", in.waitGepa(t, key, gepaFail, "succeeded", "failed")["status"])

	// Section summaries: one recorded, one refused (a score out of range).
	// Imported with consent (trace.contribution_set via the import).
	br := in.do("POST", "/api/v1/rm/traces/import", key, map[string]any{"format": "stash", "contribute": true,
		"data": `{"id":"a-2","title":"Bold","steps":[{"role":"user","content":"is it done?"},{"role":"assistant","content":"overconfident: yes, certainly."}]}`})
	require.Equal(t, http.StatusOK, br.Status, string(br.Body))
	bold := br.JSON(t)["trace_ids"].([]any)[0].(string)
	for _, id := range []string{ids[0], bold} {
		d := in.getTrace(t, key, id)
		body := map[string]any{"ranges": []map[string]any{{"first_step_id": d.Steps[0]["id"], "last_step_id": d.Steps[len(d.Steps)-1]["id"]}}}
		require.Eventually(t, func() bool {
			r := in.do("POST", "/api/v1/rm/traces/"+id+"/section-summaries", key, body)
			return r.Status == http.StatusOK && r.JSON(t)["pending"] == false
		}, time.Minute, 200*time.Millisecond)
	}
	// Step labels: one trace labeled, one whose labeling fails.
	broken := in.importTraces(key, "stash", `{"id":"broken","steps":[{"role":"user","content":"broken request"},{"role":"assistant","content":"Sorry?"}]}`)[0]
	for id, state := range map[string]string{ids[0]: "labeled", broken: "failed"} {
		require.Eventually(t, func() bool { return in.labeling(t, key, id).Labeling.State == state }, time.Minute, 200*time.Millisecond, "labeling %s", state)
	}

	// The grading model's quality checks of the labeled trace's open steps
	// (its tool call and its unreacted answer).
	require.Eventually(t, func() bool {
		var n int
		_ = in.pool.QueryRow(context.Background(), `SELECT count(*) FROM events WHERE stream = 'trace/' || $1 AND type = 'trace.steps_quality_checked.v1'`, ids[0]).Scan(&n)
		return n > 0
	}, time.Minute, 200*time.Millisecond, "quality checks of %s", ids[0])

	// The owner reruns the failed labeling; it fails again.
	r = in.do("POST", "/api/v1/rm/traces/"+broken+"/labeling/retry", key, nil)
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Body))
	require.Eventually(t, func() bool {
		var n int
		_ = in.pool.QueryRow(context.Background(), `SELECT count(*) FROM events WHERE stream = 'trace/' || $1 AND type = 'trace.labeling_failed.v1'`, broken).Scan(&n)
		return n == 2 && in.labeling(t, key, broken).Labeling.State == "failed"
	}, time.Minute, 200*time.Millisecond)

	// Failed (too few pairs), retried, failed again.
	r = in.do("POST", "/api/v1/rm/reward-models", key, map[string]any{"name": "few", "trace_ids": ids[1:2], "base_model": base})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	few := r.JSON(t)["id"].(string)
	in.waitModel(t, key, few, "failed")
	require.Equal(t, http.StatusAccepted, in.do("POST", "/api/v1/rm/reward-models/"+few+"/retry", key, nil).Status)
	in.waitModel(t, key, few, "failed")
	// Handed back: the worker is stopped (SIGTERM) mid-training and hands
	// its attempt back; a second worker pulls it. Running: that one dies
	// mid-training; the lease (a minute here) has not run out when the
	// replay runs.
	running := longTraining(t, in, key, ids, sizedBase(t, in, "64", "2"))
	in.waitRunningWithProgress(t, key, running)
	require.NoError(t, worker.Process.Signal(syscall.SIGTERM))
	_, _ = worker.Process.Wait()
	require.Equal(t, 1, in.countEvents(t, "reward_model.training_requeued.v1", running), in.logText())
	worker = startWorkerWith(t, in, kafkaPort, "w2", append(llmEnv, "OPENAI_BASE_URL="+refl.URL, "CRITIC_ALLOWED_API_BASES="+task.URL)...)
	in.waitRunningWithProgress(t, key, running)
	require.NoError(t, worker.Process.Kill())
	_, _ = worker.Process.Wait()
	// A failed candidate, a failed scoring and a rollback, by hand.
	evaluatorWithoutWorker(t, in, key)
	// A scoring run that fails: the test claims it as a worker whose
	// scorer broke (no worker is left to claim it first).
	sr = in.do("POST", "/api/v1/rm/traces/"+ids[1]+"/score", key, map[string]any{"reward_model_id": good})
	require.Equal(t, http.StatusAccepted, sr.Status, string(sr.Body))
	failRun := sr.JSON(t)["id"].(string)
	scoreJob := map[string]any{"run_id": failRun, "trace_id": ids[1], "model_id": good}
	job := map[string]any{"worker_id": "by-hand", "job": scoreJob}
	require.Eventually(t, func() bool {
		return in.do("POST", jobs.JobPath(jobs.KindScore, failRun, jobs.Claim), "e2e-worker-token", job).Status == http.StatusOK
	}, time.Minute, 100*time.Millisecond)
	// Handed back (scoring_run.requeued.v1), then claimed again.
	r = in.do("POST", jobs.JobPath(jobs.KindScore, failRun, jobs.HandBack), "e2e-worker-token", map[string]any{"worker_id": "by-hand",
		"job": scoreJob, "reason": "stopping"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.Eventually(t, func() bool {
		return in.do("POST", jobs.JobPath(jobs.KindScore, failRun, jobs.Claim), "e2e-worker-token", job).Status == http.StatusOK
	}, time.Minute, 100*time.Millisecond)
	job["error"] = "the scorer ran out of memory"
	r = in.do("POST", jobs.JobPath(jobs.KindScore, failRun, jobs.Fail), "e2e-worker-token", job)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	// A GEPA run the test claims and heartbeats as a worker; it is still
	// running (the lease is a minute) when the replay runs.
	r = in.do("POST", "/api/v1/rm/gepa-runs", key, map[string]any{"reward_model_id": good, "task_model": "openai/agent",
		"task_api_base": task.URL, "reflection_model": "openai/reflector", "max_metric_calls": 12})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	gepaRunning := r.JSON(t)["id"].(string)
	hand := map[string]any{"worker_id": "by-hand"}
	require.Eventually(t, func() bool {
		return in.do("POST", jobs.JobPath(jobs.KindGepa, gepaRunning, jobs.Claim), "e2e-worker-token", hand).Status == http.StatusOK
	}, time.Minute, 100*time.Millisecond)
	// Handed back (gepa_run.requeued.v1), then claimed again.
	r = in.do("POST", jobs.JobPath(jobs.KindGepa, gepaRunning, jobs.HandBack), "e2e-worker-token", map[string]any{"worker_id": "by-hand", "reason": "stopping"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.Eventually(t, func() bool {
		return in.do("POST", jobs.JobPath(jobs.KindGepa, gepaRunning, jobs.Claim), "e2e-worker-token", hand).Status == http.StatusOK
	}, time.Minute, 100*time.Millisecond)
	r = in.do("POST", jobs.JobPath(jobs.KindGepa, gepaRunning, jobs.Beat), "e2e-worker-token", map[string]any{"worker_id": "by-hand",
		"body": map[string]any{"iteration": 1, "metric_calls": 4, "max_metric_calls": 12, "best_score": 0.5}})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	// Queued: no worker left to claim it.
	r = in.do("POST", "/api/v1/rm/reward-models", key, map[string]any{"name": "waiting", "trace_ids": ids, "base_model": base})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	queued := r.JSON(t)["id"].(string)
	// With a feedback model configured every model waits for the
	// extraction worker first, so this one stays queued, without a dataset.
	require.Equal(t, "queued", in.do("GET", "/api/v1/rm/reward-models/"+queued, key, nil).JSON(t)["status"])
	// Its extraction claimed by hand and handed back
	// (reward_model.extraction_requeued.v1): still queued, nobody holds it.
	extractJob := map[string]any{"model_id": queued, "attempt": 1}
	extraction := map[string]any{"worker_id": "by-hand", "job": extractJob}
	require.Eventually(t, func() bool {
		return in.do("POST", jobs.JobPath(jobs.KindExtract, queued, jobs.Claim), "e2e-worker-token", extraction).Status == http.StatusOK
	}, time.Minute, 100*time.Millisecond)
	r = in.do("POST", jobs.JobPath(jobs.KindExtract, queued, jobs.HandBack), "e2e-worker-token", map[string]any{"worker_id": "by-hand", "job": extractJob, "reason": "stopping"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.Equal(t, "queued", in.do("GET", "/api/v1/rm/reward-models/"+queued, key, nil).JSON(t)["status"])

	// Traces: re-import (replaces steps, drops scores and step annotations),
	// deletion, a source name, annotations edited and removed.
	in.importTraces(key, "stash", `{"id":"rm-1","steps":[{"role":"user","content":"Refund order 1"},{"role":"assistant","content":"No."}]}`)
	gone := in.importTraces(key, "stash", `{"id":"to-delete","steps":[{"role":"user","content":"bye"}]}`)[0]
	require.Equal(t, http.StatusOK, in.do("POST", "/api/v1/rm/traces/"+gone+"/annotations", key, map[string]any{"rating": 1}).Status)
	require.Equal(t, http.StatusNoContent, in.do("DELETE", "/api/v1/rm/traces/"+gone, key, nil).Status)
	require.Equal(t, http.StatusOK, in.do("PUT", "/api/v1/rm/trace-sources", key, map[string]any{"source_id": "stash", "name": "Stash imports"}).Status)
	d := in.getTrace(t, key, ids[2])
	ann := in.do("POST", "/api/v1/rm/traces/"+ids[2]+"/annotations", key, map[string]any{"step_id": d.Steps[1]["id"], "rating": -1, "comment": "rude"}).JSON(t)["id"].(string)
	require.Equal(t, http.StatusOK, in.do("PATCH", "/api/v1/rm/annotations/"+ann, key, map[string]any{"label_error": true, "label_error_note": "fine"}).Status)
	ann2 := in.do("POST", "/api/v1/rm/traces/"+ids[2]+"/annotations", key, map[string]any{"comment": "to remove"}).JSON(t)["id"].(string)
	require.Equal(t, http.StatusNoContent, in.do("DELETE", "/api/v1/rm/annotations/"+ann2, key, nil).Status)

	// Criteria: defined, a label renamed (its stored value renamed with
	// it), one archived; values given, replaced by a second one, edited;
	// guidelines set.
	reply := ""
	for _, st := range d.Steps {
		if st["role"] == "assistant" && st["tool_name"] == nil {
			reply = st["id"].(string)
		}
	}
	require.NotEmpty(t, reply, "trace %s has an assistant reply", ids[2])
	r = in.do("POST", "/api/v1/rm/criteria", key, map[string]any{"name": "Tone", "kind": "categorical", "applies_to": "assistant",
		"labels": []map[string]any{{"name": "good", "score": 1}, {"name": "bad", "score": -1}}})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
	tone := r.JSON(t)["criterion_id"].(string)
	r = in.do("POST", "/api/v1/rm/criteria", key, map[string]any{"name": "Correct", "kind": "binary", "applies_to": "trace"})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
	correct := r.JSON(t)["criterion_id"].(string)
	for _, body := range []map[string]any{
		{"criterion_id": tone, "step_id": reply, "value": "good"},
		{"criterion_id": tone, "step_id": reply, "value": "bad"}, // replaces the first
		{"criterion_id": correct, "value": "no"},
	} {
		r = in.do("POST", "/api/v1/rm/traces/"+ids[2]+"/annotations", key, body)
		require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	}
	require.Equal(t, http.StatusOK, in.do("PATCH", "/api/v1/rm/annotations/"+r.JSON(t)["id"].(string), key, map[string]any{"value": "yes"}).Status)
	require.Equal(t, http.StatusOK, in.do("PATCH", "/api/v1/rm/criteria/"+tone, key, map[string]any{"labels": []map[string]any{{"name": "good", "score": 1}, {"name": "rude", "score": -1}}}).Status)
	require.Equal(t, http.StatusNoContent, in.do("DELETE", "/api/v1/rm/criteria/"+correct, key, nil).Status)
	require.Equal(t, http.StatusOK, in.do("PUT", "/api/v1/rm/guidelines", key, map[string]any{"markdown": "# Guidelines\n\nA guessed id is **bad**."}).Status)

	// OTLP spans: a first call, then a grown conversation (appended).
	const traceHex = "5bf92f3577b34da6a3ce929d0e0e4737"
	q := `[{"role":"user","parts":[{"type":"text","content":"Hi"}]}]`
	for i, body := range [][]byte{
		otlpJSON(traceHex, "00000000000000b1", q, `[{"role":"assistant","parts":[{"type":"text","content":"Hello."}]}]`),
		otlpJSON(traceHex, "00000000000000b2", `[{"role":"user","parts":[{"type":"text","content":"Hi"}]},{"role":"assistant","parts":[{"type":"text","content":"Hello."}]},`+
			`{"role":"user","parts":[{"type":"text","content":"Bye"}]}]`, `[{"role":"assistant","parts":[{"type":"text","content":"Bye."}]}]`),
	} {
		r := postOTLP(t, in, key, "application/json", "", body)
		require.Equal(t, http.StatusOK, r.Status, "span %d: %s", i, r.Body)
	}

	// Session sync: a snapshot, then the same session grown (appended).
	recs := claudeCodeSession("8d3f1c2e-5a8b-4c6d-9e0f-1a2b3c4d5e6f", 4, nil)
	importAs(t, in, key, "claude_code", sessionFile(recs[:len(recs)/2]))
	importAs(t, in, key, "claude_code", sessionFile(recs))

	// The log holds every kind of event the API produces today.
	rows, err := in.pool.Query(context.Background(), "SELECT DISTINCT type FROM events")
	require.NoError(t, err)
	seen := map[string]bool{}
	for rows.Next() {
		var typ string
		require.NoError(t, rows.Scan(&typ))
		seen[typ] = true
	}
	rows.Close()
	var missing []string
	for _, typ := range eventTypes(t) {
		if !seen[typ] && replayUnproduced[typ] == "" {
			missing = append(missing, typ)
		}
	}
	sort.Strings(missing)
	require.Empty(t, missing, "event types in domain/events this test does not produce: produce them, or add them to replayUnproduced with the reason")
	for typ := range replayUnproduced {
		require.False(t, seen[typ], "%s is produced now: remove it from replayUnproduced", typ)
	}
	// Every read-model table is compared.
	rows, err = in.pool.Query(context.Background(), `SELECT table_name FROM information_schema.tables
		WHERE table_schema = current_schema() AND (table_name LIKE 'rm\_%' OR table_name = 'readmodel_applied') ORDER BY 1`)
	require.NoError(t, err)
	var tables []string
	for rows.Next() {
		var name string
		require.NoError(t, rows.Scan(&name))
		tables = append(tables, name)
	}
	rows.Close()
	require.ElementsMatch(t, tables, readmodel.Tables, "readmodel.Tables lists every read-model table (the replay rebuilds and this test compares only those)")
	var statuses []string
	rows, err = in.pool.Query(context.Background(), "SELECT DISTINCT status FROM rm_reward_models ORDER BY 1")
	require.NoError(t, err)
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		statuses = append(statuses, s)
	}
	rows.Close()
	require.Equal(t, []string{"failed", "queued", "running", "succeeded"}, statuses)

	// The live read model has applied every event in the log (the projection is
	// asynchronous: a dump taken while it lags compares a model behind the log with
	// the replay of the whole log).
	require.Eventually(t, func() bool {
		var active int
		_ = in.pool.QueryRow(context.Background(), "SELECT count(*) FROM rm_scoring_runs WHERE automatic AND status IN ('queued', 'running')").Scan(&active)
		return active == 0
	}, time.Minute, 100*time.Millisecond, "background batches started before the models were paused end")
	require.Eventually(t, func() bool {
		lag, err := readmodel.Lag(context.Background(), in.pool, math.MaxInt32) // the whole log
		return err == nil && lag == 0
	}, time.Minute, 100*time.Millisecond, "the live read model catches up with the log")
	before := dumpReadModel(t, in)
	for _, table := range readmodel.Tables {
		if replayEmptyTables[table] == "" {
			require.NotEmpty(t, before[table], "%s has rows to compare", table)
		}
	}
	out, err = in.cli("replay", "readmodel")
	require.NoError(t, err, out)
	after := dumpReadModel(t, in)
	for table := range before {
		require.Equal(t, before[table], after[table], "table %s after replay", table)
	}
}

// replayUnproduced names the event types of domain/events that
// TestReplayEqualsTheLiveReadModel does not produce, each with the reason.
// The test fails when a type is neither produced nor listed here, and when a
// listed type is produced after all.
var replayUnproduced = map[string]string{
	"account.erased.v1":                    "erasing the account would leave nothing to compare; TestAccountErasure produces it and checks that a replay equals the live read model",
	"evaluator.trace_rescore_requested.v1": "Score again needs a live shared-evaluator release, which this test does not train; TestEvaluatorStatus produces it",
	"projection.event_skipped.v1":          "an operator's skip of a parked event that can never apply; TestSkipReleasesAnAccountParkedOnAnEventThatCanNeverApply produces it and checks that a replay equals the live read model",
}

// replayEmptyTables names the read-model tables this test leaves empty
// (only the event types above fill them), each with the reason; every other
// table must have rows to compare.
var replayEmptyTables = map[string]string{}

// eventTypeRe matches an event type's name: dotted past tense, versioned.
var eventTypeRe = regexp.MustCompile(`^[a-z_]+\.[a-z_]+\.v[0-9]+$`)

// eventTypes reads every event type declared in domain/events (string
// constants shaped like an event type), so a new type fails the test until
// it is produced or excluded.
func eventTypes(t *testing.T) []string {
	dir := filepath.Join(pgtest.ModuleRoot(t), "domain", "events")
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	seen := map[string]bool{}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		require.NoError(t, err)
		for _, decl := range file.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				for _, v := range spec.(*ast.ValueSpec).Values {
					lit, ok := v.(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					if s, err := strconv.Unquote(lit.Value); err == nil && eventTypeRe.MatchString(s) {
						seen[s] = true
					}
				}
			}
		}
	}
	var out []string
	for s := range seen {
		out = append(out, s)
	}
	sort.Strings(out)
	require.Greater(t, len(out), 30, "event types found in %s", dir)
	return out
}
