package worker

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/criticml/critic/domain/events"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/platform/blob"
)

// The client against a recording server: paths, bearer token, JSON bodies, and
// error mapping (409 → ErrNotClaimable, 5xx → transient, other 4xx → final).
func TestClientContract(t *testing.T) {
	type call struct {
		path, auth, ctype string
		body              map[string]any
	}
	var calls []call
	status, answer := http.StatusOK, `{}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.Equal(t, http.MethodPost, r.Method)
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		require.NoError(t, json.Unmarshal(raw, &body), string(raw))
		calls = append(calls, call{r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("Content-Type"), body})
		w.WriteHeader(status)
		w.Write([]byte(answer))
	}))
	defer srv.Close()
	ctx := context.Background()
	c := NewClient(srv.URL+"/", "tok-1", "w-1")
	last := func() call { return calls[len(calls)-1] }

	answer = `{"model_id":"m1","owner_id":"u1","name":"n","base_model":"Qwen/Qwen3-0.6B","dataset_key":"datasets/m1/1.json",
		"artifact_key":"reward-models/u1/m1.tar.gz","attempt":2,"epochs":3,"lease_seconds":90}`
	claim, err := c.ClaimTraining(ctx, "m1", 2)
	require.NoError(t, err)
	require.Equal(t, jobs.TrainingClaim{ModelID: "m1", OwnerID: "u1", Name: "n", BaseModel: "Qwen/Qwen3-0.6B",
		DatasetKey: "datasets/m1/1.json", ArtifactKey: "reward-models/u1/m1.tar.gz", Attempt: 2, Epochs: 3, LeaseSeconds: 90}, *claim)
	job := map[string]any{"model_id": "m1", "attempt": 2.0, "owner_id": ""}
	require.Equal(t, call{"/api/v1/worker/jobs/train/m1/claim", "Bearer tok-1", "application/json",
		map[string]any{"worker_id": "w-1", "job": job}}, last())

	answer = `{}`
	require.NoError(t, c.Heartbeat(ctx, "m1", 2, events.Progress{Phase: "training", Step: 3, TotalSteps: 10, Loss: 0.5, TokensPerSec: 100}))
	require.Equal(t, "/api/v1/worker/jobs/train/m1/beat", last().path)
	require.Equal(t, map[string]any{"worker_id": "w-1", "job": job, "body": map[string]any{
		"phase": "training", "step": 3.0, "total_steps": 10.0, "loss": 0.5, "tokens_per_sec": 100.0}}, last().body)

	require.NoError(t, c.TrainingSucceeded(ctx, "m1", 2, jobs.Succeeded{Metrics: json.RawMessage(`{"train_pairs": 4}`),
		RewardStats: json.RawMessage(`{"mean":1,"std":2,"count":8}`), ScoresKey: "jobs/m1/attempt-2/scores.jsonl"}))
	require.Equal(t, "/api/v1/worker/jobs/train/m1/finish", last().path)
	require.Equal(t, map[string]any{"worker_id": "w-1", "job": job, "body": map[string]any{"metrics": map[string]any{"train_pairs": 4.0},
		"reward_stats": map[string]any{"mean": 1.0, "std": 2.0, "count": 8.0}, "action_reward_stats": nil,
		"scores_key": "jobs/m1/attempt-2/scores.jsonl", "action_scores_key": ""}}, last().body)

	require.NoError(t, c.TrainingFailed(ctx, "m1", 2, "boom"))
	require.Equal(t, call{"/api/v1/worker/jobs/train/m1/fail", "Bearer tok-1", "application/json",
		map[string]any{"worker_id": "w-1", "job": job, "error": "boom"}}, last())

	answer = `{"items_key":"scoring/r1/items.json"}`
	sc, err := c.ClaimScoring(ctx, "r1", "t1", "m1")
	require.NoError(t, err)
	require.Equal(t, "scoring/r1/items.json", sc.ItemsKey)
	run := map[string]any{"run_id": "r1", "trace_id": "t1", "model_id": "m1", "owner_id": ""}
	require.Equal(t, call{"/api/v1/worker/jobs/score/r1/claim", "Bearer tok-1", "application/json",
		map[string]any{"worker_id": "w-1", "job": run}}, last())

	answer = `{}`
	require.NoError(t, c.ScoringFinished(ctx, "r1", "t1", "m1", jobs.ScoringFinished{
		ActionScores: []jobs.ActionScore{{TraceID: "t1", StepID: "s1", Score: 1.5, Credit: 0.25}}}, ""))
	require.Equal(t, map[string]any{"worker_id": "w-1", "job": run, "body": map[string]any{
		"action_scores": []any{map[string]any{"trace_id": "t1", "step_id": "s1", "score": 1.5, "credit": 0.25}}}}, last().body)
	require.NoError(t, c.ScoringFinished(ctx, "r1", "t1", "m1", jobs.ScoringFinished{}, "bad"))
	require.Equal(t, "/api/v1/worker/jobs/score/r1/fail", last().path)
	require.Equal(t, "bad", last().body["error"])

	// Errors.
	status, answer = http.StatusConflict, `{"detail":"model m1 is not queued","code":"not_claimable"}`
	_, err = c.ClaimTraining(ctx, "m1", 2)
	require.ErrorIs(t, err, ErrNotClaimable)
	require.False(t, Transient(err))
	var ae *APIError
	require.True(t, errors.As(err, &ae))
	require.Equal(t, "not_claimable", ae.Code)
	require.Equal(t, "model m1 is not queued", ae.Detail)
	require.ErrorIs(t, c.Heartbeat(ctx, "m1", 2, events.Progress{}), ErrNotClaimable)

	status, answer = http.StatusServiceUnavailable, `upstream down`
	err = c.TrainingFailed(ctx, "m1", 2, "x")
	require.True(t, Transient(err))
	require.NotErrorIs(t, err, ErrNotClaimable)
	require.ErrorContains(t, err, "upstream down")

	status, answer = http.StatusUnprocessableEntity, `{"detail":"the checkpoint is not in the blob store","code":"invalid"}`
	err = c.TrainingSucceeded(ctx, "m1", 2, jobs.Succeeded{})
	require.False(t, Transient(err))
	require.ErrorContains(t, err, "422 invalid: the checkpoint is not in the blob store")

	srv.Close()
	_, err = c.ClaimTraining(ctx, "m1", 2)
	require.True(t, Transient(err), "connection refused is transient: %v", err)
}

// The client against the real worker service: what it sends is what the
// service decodes (strictly: an unknown field would be a 422), and the
// service's answers map to the client's errors.
func TestClientAgainstTheService(t *testing.T) {
	blobs, err := blob.NewLocal(t.TempDir())
	require.NoError(t, err)
	svc := newService(t, blobs)
	id, ds := svc.queueTraining(t, "some/base")
	ctx := context.Background()
	c := svc.client("w-1")

	claim, err := c.ClaimTraining(ctx, id, 1)
	require.NoError(t, err)
	owner := svc.owner.UserID
	require.Equal(t, jobs.TrainingClaim{ModelID: id, OwnerID: owner, Name: "rm", BaseModel: "some/base",
		DatasetKey: claim.DatasetKey, ArtifactKey: jobs.ArtifactKey(owner, id), Attempt: 1, Epochs: 2, LeaseSeconds: 30}, *claim)
	require.NotEmpty(t, claim.DatasetKey)
	_, err = c.ClaimTraining(ctx, id, 1)
	require.ErrorIs(t, err, ErrNotClaimable, "claimed once")
	require.NoError(t, c.Heartbeat(ctx, id, 1, events.Progress{Phase: "training", Step: 1, TotalSteps: 2}))
	require.ErrorIs(t, svc.client("w-2").Heartbeat(ctx, id, 1, events.Progress{}), ErrNotClaimable, "only the holder")

	// A success report naming a key the job did not issue is refused (422,
	// final), and nothing is read from it.
	require.NoError(t, blobs.Put(ctx, claim.ArtifactKey, []byte("checkpoint")))
	err = c.TrainingSucceeded(ctx, id, 1, jobs.Succeeded{Metrics: json.RawMessage(`{}`),
		ScoresKey: claim.DatasetKey})
	require.ErrorContains(t, err, "422")
	require.ErrorContains(t, err, "scores_key must be "+jobs.ScoresKey(owner, id, 1))
	require.False(t, Transient(err))

	var lines []byte
	for _, it := range ds.ScoreItems {
		lines = append(lines, []byte(`{"trace_id":"`+it.TraceID+`","score":0.5}`+"\n")...)
	}
	require.NoError(t, blobs.Put(ctx, jobs.ScoresKey(owner, id, 1), lines))
	require.NoError(t, c.TrainingSucceeded(ctx, id, 1, jobs.Succeeded{
		Metrics: json.RawMessage(`{"eval_pairs":0}`), RewardStats: json.RawMessage(`{"mean":0,"std":1,"count":5}`),
		ScoresKey: jobs.ScoresKey(owner, id, 1)}))
	require.Equal(t, "succeeded", svc.status(t, id).Status)
	require.ErrorIs(t, c.TrainingFailed(ctx, id, 1, "late"), ErrNotClaimable)

	// Wrong token: 401, which the worker retries (an operator fixes it).
	bad := NewClient(svc.srv.URL, "wrong", "w-1")
	_, err = bad.ClaimTraining(ctx, id, 1)
	var ae *APIError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, http.StatusUnauthorized, ae.Status)
	require.True(t, Transient(err))
}

// A 409 that says another write won a race is retried, not taken for a
// lost job (a success report racing a heartbeat was dropped that way, and
// the model waited for its lease to expire); every other 409 is final.
func TestConcurrentWriteIsRetriedNotALostJob(t *testing.T) {
	race := &APIError{Method: "POST", Path: "/x/succeeded", Status: http.StatusConflict, Code: jobs.CodeConcurrentWrite}
	require.False(t, errors.Is(race, ErrNotClaimable))
	require.True(t, Transient(race))
	gone := &APIError{Method: "POST", Path: "/x/succeeded", Status: http.StatusConflict, Code: "not_claimable"}
	require.True(t, errors.Is(gone, ErrNotClaimable))
	require.False(t, Transient(gone))
}
