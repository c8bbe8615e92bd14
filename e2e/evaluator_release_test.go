package e2e

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain/jobs"
)

// evaluatorTraces is how many corrected conversations bootstrapEvaluator
// opts in: enough that both sides of the benchmark split (a fixed 30% of
// trace groups) get some, whatever the account's id.
const evaluatorTraces = 20

var candidateRe = regexp.MustCompile(`candidate ([0-9a-f-]{36}) queued`)

// bootstrapEvaluator runs the shared evaluator's first release through the
// binary like an operator and its users: conversations imported opted in
// (trace.contribution_set), the feedback model's alternatives reviewed
// through POST /comparisons (comparison.reviewed), a benchmark frozen, a
// candidate trained by the running worker on the tiny base, the gate
// report, the release — after which the worker scores traces
// automatically. It returns a trace the release scored.
func bootstrapEvaluator(t *testing.T, in *instance, key, base string) string {
	t.Helper()
	var lines []string
	for i := range evaluatorTraces {
		lines = append(lines, fmt.Sprintf(`{"id":"ev-%d","metadata":{"domain":"sorting","evaluation_context":"sort ascending"},"steps":[{"role":"system","content":"Sort what you are given."},`+
			`{"role":"user","content":"Sort 3, 1, 2 ascending (case %d)"},{"role":"assistant","content":"Sorted: 3, 2, 1."},{"role":"user","content":"No, that's the wrong order."}]}`, i, i))
	}
	r := in.do("POST", "/api/v1/rm/traces/import", key, map[string]any{"format": "stash", "data": strings.Join(lines, "\n"), "contribute": true})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	var ids []string
	for _, id := range r.JSON(t)["trace_ids"].([]any) {
		ids = append(ids, id.(string))
	}
	// Extraction records the findings; training then fails on the missing
	// base model, which the comparisons do not need.
	r = in.do("POST", "/api/v1/rm/reward-models", key, map[string]any{"name": "evaluator-feedback", "trace_ids": ids, "base_model": filepath.Join(t.TempDir(), "no-base"),
		"training_config": map[string]any{"annotation_source": "feedback", "input_version": 1}})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	in.waitModel(t, key, r.JSON(t)["id"].(string), "succeeded", "failed")
	q := in.do("GET", "/api/v1/rm/comparisons/queue?limit=100", key, nil)
	require.Equal(t, http.StatusOK, q.Status, string(q.Body))
	// The reviewer keeps the original action every time. (The worker trains
	// with the spec's lr 1e-5, which barely moves a tiny random base in a
	// few steps; that base, seeded, ranks the original first, so with these
	// verdicts the first candidate beats chance and the release ships.
	// Preferring the alternative fails the gate: accuracy 0 against 0.5.)
	reviewed := 0
	for _, raw := range q.JSON(t)["items"].([]any) {
		it := raw.(map[string]any)
		left := it["left"].(map[string]any)["kind"].(string)
		choice := "left"
		if left != "original" {
			choice = "right"
		}
		r := in.do("POST", "/api/v1/rm/comparisons", key, map[string]any{"model_id": it["model_id"], "finding_id": it["finding_id"], "left": left, "choice": choice})
		require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
		reviewed++
	}
	require.GreaterOrEqual(t, reviewed, evaluatorTraces, "a comparison per corrected conversation")

	out, err := in.cli("evaluator", "benchmark", "freeze")
	require.NoError(t, err, out)
	out, err = in.cli("evaluator", "train", "--base", base)
	require.NoError(t, err, out)
	require.Regexp(t, candidateRe, out)
	require.Eventually(t, func() bool {
		out, err = in.cli("evaluator", "report")
		return err == nil
	}, 3*time.Minute, 500*time.Millisecond, "the worker never trained the candidate: %s\n%s", out, in.logText())
	require.Contains(t, out, "against chance (no release yet)")
	require.Contains(t, out, "domain=sorting")
	out, err = in.cli("evaluator", "release")
	require.NoError(t, err, "the candidate passes the gates against chance: %s", out)
	require.Contains(t, out, "release 1 is live")

	// GET /evaluator and its Connect twin show the release and its figures.
	var st map[string]any
	require.Eventually(t, func() bool { // the CLI appended it; the server's read model follows
		st = in.do("GET", "/api/v1/rm/evaluator", key, nil).JSON(t)
		return st["status"] == "released"
	}, time.Minute, 100*time.Millisecond)
	rel := st["release"].(map[string]any)
	require.EqualValues(t, 1, rel["version"])
	figures := rel["benchmark"].(map[string]any)
	require.EqualValues(t, 1, figures["accuracy"])
	require.EqualValues(t, 0.5, figures["incumbent_accuracy"])
	cr := in.do("POST", "/critic.v1.EvaluatorService/GetEvaluator", key, map[string]any{})
	require.Equal(t, http.StatusOK, cr.Status, string(cr.Body))
	crel := cr.JSON(t)["release"].(map[string]any)
	require.EqualValues(t, 1, crel["version"])
	require.Equal(t, rel["candidate_id"], crel["candidate_id"])
	require.EqualValues(t, figures["items"], crel["items"])
	require.EqualValues(t, 1, crel["accuracy"])

	// The release rescores every trace in the background.
	var scored string
	require.Eventually(t, func() bool {
		// The trace's stream is sealed under its key (the payload is
		// ciphertext in the table); the envelope's stream and type are clear.
		_ = in.pool.QueryRow(context.Background(), `SELECT stream FROM events WHERE type = 'evaluator.trace_scored.v1' AND stream = 'trace/' || $1`, ids[0]).Scan(&scored)
		return scored != ""
	}, 2*time.Minute, 200*time.Millisecond, "release 1 never scored the traces")
	// The read model applies the event after it is in the log: the trace
	// shows it once it has (a GET does not wait for it).
	var ev map[string]any
	require.Eventually(t, func() bool {
		ev = in.do("GET", "/api/v1/rm/traces/"+ids[0], key, nil).JSON(t)["evaluator"].(map[string]any)
		return ev["status"] != "scoring"
	}, time.Minute, 100*time.Millisecond, "the read model never applied the trace's score")
	require.Equal(t, "scored", ev["status"])
	require.Len(t, ev["action_scores"], 1, "the one assistant action")
	return scored
}

// evaluatorWithoutWorker produces the rest of the evaluator's events once
// no worker is left, claiming as a worker by hand: a candidate that fails,
// a trace whose scoring fails, then a rollback (traces wait again).
func evaluatorWithoutWorker(t *testing.T, in *instance, key string) {
	t.Helper()
	out, err := in.cli("evaluator", "train")
	require.NoError(t, err, out)
	id := candidateRe.FindStringSubmatch(out)[1]
	hand := map[string]any{"worker_id": "by-hand", "job": map[string]any{"candidate_id": id}}
	require.Eventually(t, func() bool {
		return in.do("POST", jobs.JobPath(jobs.KindEvaluatorTrain, id, jobs.Claim), "e2e-worker-token", hand).Status == http.StatusOK
	}, time.Minute, 100*time.Millisecond)
	// Handed back (evaluator.candidate_requeued.v1), then claimed again.
	r := in.do("POST", jobs.JobPath(jobs.KindEvaluatorTrain, id, jobs.HandBack), "e2e-worker-token", map[string]any{"worker_id": "by-hand", "reason": "stopping"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.Eventually(t, func() bool {
		return in.do("POST", jobs.JobPath(jobs.KindEvaluatorTrain, id, jobs.Claim), "e2e-worker-token", hand).Status == http.StatusOK
	}, time.Minute, 100*time.Millisecond)
	// A heartbeat renews its lease (evaluator.candidate_heartbeat.v1).
	r = in.do("POST", jobs.JobPath(jobs.KindEvaluatorTrain, id, jobs.Beat), "e2e-worker-token", hand)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	r = in.do("POST", jobs.JobPath(jobs.KindEvaluatorTrain, id, jobs.Fail), "e2e-worker-token", map[string]any{"worker_id": "by-hand", "error": "the GPU fell off the bus"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))

	late := in.importTraces(key, "stash", `{"id":"ev-late","steps":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]}`)[0]
	var claim map[string]any
	scoring := map[string]any{"worker_id": "by-hand", "job": map[string]any{"trace_id": late}}
	require.Eventually(t, func() bool {
		r := in.do("POST", jobs.JobPath(jobs.KindEvaluatorScore, late, jobs.Claim), "e2e-worker-token", scoring)
		if r.Status != http.StatusOK {
			return false
		}
		claim = r.JSON(t)
		return true
	}, time.Minute, 100*time.Millisecond)
	r = in.do("POST", jobs.JobPath(jobs.KindEvaluatorScore, late, jobs.Fail), "e2e-worker-token", map[string]any{"worker_id": "by-hand",
		"body": map[string]any{"trace_revision": claim["trace_revision"], "release": claim["release"]}, "error": "the scorer ran out of memory"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.Eventually(t, func() bool {
		ev := in.do("GET", "/api/v1/rm/traces/"+late, key, nil).JSON(t)["evaluator"].(map[string]any)
		return ev["status"] == "failed"
	}, time.Minute, 100*time.Millisecond)

	out, err = in.cli("evaluator", "rollback")
	require.NoError(t, err, out)
	require.Contains(t, out, "no release is live")
	out, err = in.cli("evaluator", "verify")
	require.NoError(t, err, out)
	require.Contains(t, out, "2 candidate dataset(s) and 1 release(s) rebuild exactly as recorded")
}
