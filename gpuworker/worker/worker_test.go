package worker

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/gpuworker/hub"
	"github.com/criticml/critic/gpuworker/model"
	"github.com/criticml/critic/gpuworker/train"
	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/platform/bus"
)

type setup struct {
	api   *fakeAPI
	blobs *blob.Local
	base  string
	data  string
}

func newSetup(t *testing.T) *setup {
	blobs, err := blob.NewLocal(t.TempDir())
	require.NoError(t, err)
	return &setup{api: newFakeAPI(t), blobs: blobs, base: writeTinyBase(t), data: t.TempDir()}
}

func (s *setup) config(t *testing.T, workerID string) Config {
	return Config{Client: s.api.client(workerID), Blobs: s.blobs, DataDir: s.data, Log: testLogger(t)}
}

// queueTraining stores a dataset and lets the fake API hand out one claim for it.
func (s *setup) queueTraining(t *testing.T, modelID, base string, ds rewardmodels.Dataset) TrainingClaim {
	key := "datasets/" + modelID + "/attempt-1.json"
	require.NoError(t, s.blobs.Put(context.Background(), key, mustJSON(t, ds)))
	job := TrainingClaim{ModelID: modelID, OwnerID: "u1", Name: "rm", BaseModel: base, DatasetKey: key,
		ArtifactKey: jobs.ArtifactKey("u1", modelID), Attempt: 1, Epochs: 2, LeaseSeconds: 30}
	s.api.mu.Lock()
	s.api.jobs[modelID] = job
	s.api.mu.Unlock()
	return job
}

func publish(t *testing.T, pub *bus.Publisher, topic, key string, v any) {
	t.Helper()
	msg := message.NewMessage(watermill.NewUUID(), mustJSON(t, v))
	msg.Metadata.Set(bus.MetadataPartitionKey, key)
	require.NoError(t, pub.Publish(topic, msg))
}

// The whole loop against the embedded broker, a local blob store and a fake of
// the worker service: a train message is claimed, trained, archived, uploaded
// and reported; its duplicate is refused by the claim and skipped; a score
// message scores actions with the uploaded checkpoint.
func TestRunTrainsAndScores(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a broker and trains")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s := newSetup(t)
	broker, err := bus.StartEmbedded(ctx, bus.EmbeddedConfig{})
	require.NoError(t, err)
	defer broker.Close()
	pub, err := bus.NewPublisher(bus.Config{Brokers: broker.Addrs()}, nil)
	require.NoError(t, err)
	defer pub.Close()

	ds := testDataset("m1")
	job := s.queueTraining(t, "m1", s.base, ds)
	cfg := s.config(t, "w-1")
	cfg.Brokers = broker.Addrs()
	cfg.HeartbeatMinInterval = time.Millisecond
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- Run(runCtx, cfg) }()

	publish(t, pub, TopicTrain, "m1", TrainMessage{ModelID: "m1", Attempt: 1, OwnerID: "u1"})
	succ := s.api.waitFor("/training/m1/succeeded", 1, 2*time.Minute)
	require.Len(t, s.api.requests("/training/m1/claim"), 1)
	require.Empty(t, s.api.requests("/failed"))
	require.Equal(t, map[string]any{"worker_id": "w-1", "attempt": 1.0}, s.api.requests("/training/m1/claim")[0].Body)

	// Heartbeats carried progress through every phase.
	phases := map[string]bool{}
	for _, hb := range s.api.requests("/training/m1/heartbeat") {
		require.Equal(t, "w-1", hb.Body["worker_id"])
		require.Equal(t, 1.0, hb.Body["attempt"])
		phases[hb.Body["progress"].(map[string]any)["phase"].(string)] = true
	}
	require.True(t, phases["training"], "phases %v", phases)
	for p := range phases {
		require.Contains(t, []string{"training", "scoring", "uploading"}, p)
	}

	// The success report.
	var rep struct {
		WorkerID          string                 `json:"worker_id"`
		Attempt           int                    `json:"attempt"`
		Metrics           map[string]any         `json:"metrics"`
		RewardStats       model.RewardStats      `json:"reward_stats"`
		ActionRewardStats *model.RewardStats     `json:"action_reward_stats"`
		ScoresKey         string                 `json:"scores_key"`
		ActionScoresKey   string                 `json:"action_scores_key"`
		Extra             map[string]interface{} `json:"-"`
	}
	require.NoError(t, json.Unmarshal(succ[0].Raw, &rep))
	require.Equal(t, "w-1", rep.WorkerID)
	require.Equal(t, 1, rep.Attempt)
	require.Equal(t, "jobs/u1/m1/attempt-1/scores.jsonl", rep.ScoresKey)
	require.Equal(t, "jobs/u1/m1/attempt-1/action_scores.jsonl", rep.ActionScoresKey)
	for _, k := range []string{"train_pairs", "eval_pairs", "eval_accuracy", "eval_split", "excluded_cross_trace_pairs",
		"action_scoring_version", "action_train_pairs", "action_eval_pairs", "action_eval_accuracy", "tool_eval_pairs",
		"tool_eval_accuracy", "final_loss", "epochs", "device", "seconds"} {
		require.Contains(t, rep.Metrics, k)
	}
	require.Equal(t, 2.0, rep.Metrics["epochs"])
	require.Equal(t, "trace", rep.Metrics["eval_split"])
	require.Equal(t, "cpu", rep.Metrics["device"])
	require.Equal(t, 1.0, rep.Metrics["action_scoring_version"])
	require.Greater(t, rep.Metrics["train_pairs"].(float64), 0.0)
	require.Greater(t, rep.RewardStats.Count, 0)
	require.NotNil(t, rep.ActionRewardStats)

	// What is in the blob store.
	archive := filepath.Join(t.TempDir(), "a.tar.gz")
	require.NoError(t, s.blobs.GetToFile(ctx, job.ArtifactKey, archive))
	require.Contains(t, tarEntries(t, archive), "reward-model/model.safetensors")
	raw, err := s.blobs.Get(ctx, rep.ScoresKey)
	require.NoError(t, err)
	scores := readJSONLines[struct {
		TraceID string  `json:"trace_id"`
		Score   float64 `json:"score"`
	}](t, raw)
	require.Len(t, scores, len(ds.ScoreItems))
	for i, sc := range scores {
		require.Equal(t, ds.ScoreItems[i].TraceID, sc.TraceID)
	}
	raw, err = s.blobs.Get(ctx, rep.ActionScoresKey)
	require.NoError(t, err)
	trained := readJSONLines[ActionScore](t, raw)
	require.Len(t, trained, len(ds.ActionScoreItems))
	for i, a := range trained {
		require.Equal(t, ds.ActionScoreItems[i].StepID, a.StepID)
		require.InDelta(t, math.Tanh((a.Score-rep.ActionRewardStats.Mean)/(2*rep.ActionRewardStats.Std)), a.Credit, 1e-9)
	}
	require.NoDirExists(t, filepath.Join(s.data, "worker", "jobs", "m1", "attempt-1"), "job scratch is removed")

	// A duplicate delivery: the claim answers 409, the message is skipped.
	heartbeats := len(s.api.requests("/heartbeat"))
	publish(t, pub, TopicTrain, "m1", TrainMessage{ModelID: "m1", Attempt: 1, OwnerID: "u1"})
	s.api.waitFor("/training/m1/claim", 2, time.Minute)

	// Scoring with the uploaded checkpoint: same texts, same scores and credit.
	items := jobs.ScoringItems{RunID: "r1", ModelID: "m1", ArtifactKey: job.ArtifactKey,
		Trace: ds.ScoreItems[0], ActionScoreItems: ds.ActionScoreItems}
	require.NoError(t, s.blobs.Put(ctx, "scoring/r1/items.json", mustJSON(t, items)))
	s.api.mu.Lock()
	s.api.scoring["r1"] = "scoring/r1/items.json"
	s.api.mu.Unlock()
	publish(t, pub, TopicScore, "r1", ScoreMessage{RunID: "r1", TraceID: "t1", ModelID: "m1", OwnerID: "u1"})
	fin := s.api.waitFor("/scoring/r1/finished", 1, time.Minute)
	require.Equal(t, map[string]any{"worker_id": "w-1", "trace_id": "t1", "model_id": "m1"},
		s.api.requests("/scoring/r1/claim")[0].Body)
	var f struct {
		WorkerID     string        `json:"worker_id"`
		TraceID      string        `json:"trace_id"`
		ModelID      string        `json:"model_id"`
		ActionScores []ActionScore `json:"action_scores"`
		Error        string        `json:"error"`
	}
	require.NoError(t, json.Unmarshal(fin[0].Raw, &f))
	require.Equal(t, "", f.Error)
	require.Equal(t, "t1", f.TraceID)
	require.Len(t, f.ActionScores, len(trained))
	for i, a := range f.ActionScores {
		require.Equal(t, trained[i].StepID, a.StepID)
		require.Equal(t, trained[i].TraceID, a.TraceID)
		require.InDelta(t, trained[i].Score, a.Score, 1e-5)
		require.InDelta(t, trained[i].Credit, a.Credit, 1e-5)
	}
	entries, err := os.ReadDir(filepath.Join(s.data, "worker", "checkpoints"))
	require.NoError(t, err)
	require.Len(t, entries, 1, "the checkpoint is cached once")

	// A duplicate score message is skipped too.
	publish(t, pub, TopicScore, "r1", ScoreMessage{RunID: "r1", TraceID: "t1", ModelID: "m1", OwnerID: "u1"})
	s.api.waitFor("/scoring/r1/claim", 2, time.Minute)

	stop()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	require.Len(t, s.api.requests("/succeeded"), 1, "no second training")
	require.Len(t, s.api.requests("/heartbeat"), heartbeats, "no heartbeat after the duplicate")
	require.Len(t, s.api.requests("/scoring/r1/finished"), 1)
	require.Empty(t, s.api.requests("/failed"))
}

// A base model the hub cannot serve fails the job; /failed carries the end of
// the job's log, which ends with the hub's error.
func TestTrainFailureReportsLogTail(t *testing.T) {
	s := newSetup(t)
	hubSrv := httptest.NewServer(http.NotFoundHandler())
	defer hubSrv.Close()
	cfg := s.config(t, "w-2")
	cfg.Hub = &hub.Client{Endpoint: hubSrv.URL, CacheDir: filepath.Join(s.data, "models"), HTTP: hubSrv.Client()}
	w, err := New(cfg)
	require.NoError(t, err)
	s.queueTraining(t, "m2", "Qwen/Qwen3-0.6B", testDataset("m2"))

	require.True(t, w.HandleTrain(context.Background(), mustJSON(t, TrainMessage{ModelID: "m2", Attempt: 1})))
	failed := s.api.requests("/training/m2/failed")
	require.Len(t, failed, 1)
	require.Empty(t, s.api.requests("/succeeded"))
	msg := failed[0].Body["error"].(string)
	require.LessOrEqual(t, len([]rune(msg)), ErrorTailChars)
	require.Contains(t, msg, "claimed training job")
	require.Contains(t, msg, "Qwen/Qwen3-0.6B")
	last := strings.TrimSpace(msg[strings.LastIndex(strings.TrimSpace(msg), "\n")+1:])
	require.Contains(t, last, "training failed")
	require.Contains(t, last, "hub: Qwen/Qwen3-0.6B@main has no config.json: not found")
	require.Equal(t, "w-2", failed[0].Body["worker_id"])
	require.Equal(t, 1.0, failed[0].Body["attempt"])

	// The duplicate: 409 → skipped, acknowledged, nothing reported.
	require.True(t, w.HandleTrain(context.Background(), mustJSON(t, TrainMessage{ModelID: "m2", Attempt: 1})))
	require.Len(t, s.api.requests("/failed"), 1)

	// Malformed messages are dropped (acknowledged) without calling the API.
	n := len(s.api.requests(""))
	require.True(t, w.HandleTrain(context.Background(), []byte(`{"model_id":"../x","attempt":1}`)))
	require.True(t, w.HandleTrain(context.Background(), []byte(`not json`)))
	require.True(t, w.HandleScore(context.Background(), []byte(`{}`)))
	require.Len(t, s.api.requests(""), n)
}

// A heartbeat answered 409 (the lease is lost) stops the job: nothing is
// uploaded or reported.
func TestLeaseLostStopsWithoutReport(t *testing.T) {
	s := newSetup(t)
	cfg := s.config(t, "w-3")
	cfg.TrainOptions = func(o *train.Options) {
		progress := o.Progress
		o.Progress = func(step, total int, loss, tps float64) {
			progress(step, total, loss, tps)
			time.Sleep(300 * time.Millisecond) // the heartbeat's 409 arrives mid-training
		}
	}
	w, err := New(cfg)
	require.NoError(t, err)
	job := s.queueTraining(t, "m3", s.base, testDataset("m3"))
	s.api.mu.Lock()
	s.api.leaseLost = true
	s.api.mu.Unlock()

	require.True(t, w.HandleTrain(context.Background(), mustJSON(t, TrainMessage{ModelID: "m3", Attempt: 1})))
	require.NotEmpty(t, s.api.requests("/training/m3/heartbeat"))
	require.Empty(t, s.api.requests("/succeeded"))
	require.Empty(t, s.api.requests("/failed"))
	_, err = s.blobs.Get(context.Background(), job.ArtifactKey)
	require.ErrorIs(t, err, blob.ErrNotFound, "nothing was uploaded")
}

// Shutdown mid-training: the job stops, success is not reported, the message is
// left unacknowledged, and the interruption is reported as a failure.
func TestShutdownMidTraining(t *testing.T) {
	s := newSetup(t)
	ctx, cancel := context.WithCancel(context.Background())
	cfg := s.config(t, "w-4")
	cfg.TrainOptions = func(o *train.Options) {
		progress := o.Progress
		o.Progress = func(step, total int, loss, tps float64) {
			progress(step, total, loss, tps)
			cancel()
		}
	}
	w, err := New(cfg)
	require.NoError(t, err)
	s.queueTraining(t, "m4", s.base, testDataset("m4"))
	require.False(t, w.HandleTrain(ctx, mustJSON(t, TrainMessage{ModelID: "m4", Attempt: 1})))
	require.Empty(t, s.api.requests("/succeeded"))
	failed := s.api.requests("/training/m4/failed")
	require.Len(t, failed, 1)
	require.Contains(t, failed[0].Body["error"], "worker shutting down")
}

// Scoring with a model trained without action comparisons reports an error.
func TestScoringWithoutActionStatsReportsError(t *testing.T) {
	s := newSetup(t)
	w, err := New(s.config(t, "w-5"))
	require.NoError(t, err)
	defer w.Close()
	job := trainTiny(t)
	require.NoError(t, os.Remove(filepath.Join(job, "model", "action_reward_stats.json")))
	archive := filepath.Join(t.TempDir(), "a.tar.gz")
	require.NoError(t, WriteArchive(filepath.Join(job, "model"), archive))
	ctx := context.Background()
	require.NoError(t, s.blobs.PutFile(ctx, "reward-models/u1/m5.tar.gz", archive))
	ds := testDataset("m5")
	require.NoError(t, s.blobs.Put(ctx, "scoring/r5.json", mustJSON(t, jobs.ScoringItems{RunID: "r5", ModelID: "m5",
		ArtifactKey: "reward-models/u1/m5.tar.gz", ActionScoreItems: ds.ActionScoreItems})))
	s.api.mu.Lock()
	s.api.scoring["r5"] = "scoring/r5.json"
	s.api.mu.Unlock()
	require.True(t, w.HandleScore(ctx, mustJSON(t, ScoreMessage{RunID: "r5", TraceID: "t1", ModelID: "m5"})))
	fin := s.api.requests("/scoring/r5/finished")
	require.Len(t, fin, 1)
	require.Contains(t, fin[0].Body["error"], "action_reward_stats.json")
	require.Equal(t, []any{}, fin[0].Body["action_scores"])
}
