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
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/gpuworker/hub"
	"github.com/criticml/critic/gpuworker/train"
	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/platform/bus"
)

type setup struct {
	api   *service
	blobs *blob.Local
	base  string
	data  string
}

// newSetup is a worker's world: the real worker service on PostgreSQL, a
// local blob store both sides share, a tiny base model and scratch space.
func newSetup(t *testing.T) *setup {
	blobs, err := blob.NewLocal(t.TempDir())
	require.NoError(t, err)
	return &setup{api: newService(t, blobs), blobs: blobs, base: writeTinyBase(t), data: t.TempDir()}
}

func (s *setup) config(t *testing.T, workerID string) Config {
	return Config{Client: s.api.client(workerID), Blobs: s.blobs, DataDir: s.data, Log: testLogger(t)}
}

func publish(t *testing.T, pub *bus.Publisher, topic, key string, v any) {
	t.Helper()
	msg := message.NewMessage(watermill.NewUUID(), mustJSON(t, v))
	msg.Metadata.Set(bus.MetadataPartitionKey, key)
	require.NoError(t, pub.Publish(topic, msg))
}

// The whole loop against the embedded broker, a local blob store and the
// real worker service: a train message is claimed, trained, archived,
// uploaded and reported, and the model succeeds with its scores; its
// duplicate is refused by the claim and skipped; a score message scores the
// trace's actions with the uploaded checkpoint and the run succeeds.
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

	id, ds := s.api.queueTraining(t, s.base)
	owner := s.api.owner.UserID
	cfg := s.config(t, "w-1")
	cfg.Brokers = broker.Addrs()
	cfg.HeartbeatMinInterval = time.Millisecond
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- Run(runCtx, cfg) }()

	publish(t, pub, jobs.TopicTrain, id, s.api.trainMessage(id))
	succ := s.api.waitFor("/jobs/train/"+id+"/finish", 1, 2*time.Minute)
	require.Equal(t, http.StatusOK, succ[0].Status, string(succ[0].Raw))
	// The worker checked the API first, then pulled the attempt from the
	// queue (the message only woke it): no claim names the model.
	hello := s.api.requests("/hello")
	require.Len(t, hello, 1)
	require.Equal(t, http.StatusOK, hello[0].Status)
	require.Empty(t, s.api.requests("/jobs/train/"+id+"/claim"))
	pulls := s.api.requests("/jobs/train/claim")
	require.NotEmpty(t, pulls)
	require.Equal(t, "w-1", pulls[0].Body["worker_id"])
	require.Equal(t, "worker", pulls[0].Body["compute"])
	require.Contains(t, []any{"cpu", "gpu"}, pulls[0].Body["device"], "the poll reports the worker's device for GET /base-models")
	require.Empty(t, s.api.requestsOf(jobs.KindTrain, "/fail"))
	require.Equal(t, "w-1", s.api.status(t, id).WorkerID)

	// Heartbeats carried progress through every phase, and the service
	// accepted them.
	phases := map[string]bool{}
	for _, hb := range s.api.requests("/jobs/train/" + id + "/beat") {
		require.Equal(t, http.StatusOK, hb.Status)
		require.Equal(t, "w-1", hb.Body["worker_id"])
		require.Equal(t, 1.0, hb.Body["job"].(map[string]any)["attempt"])
		phases[hb.Body["body"].(map[string]any)["phase"].(string)] = true
	}
	require.True(t, phases["training"], "phases %v", phases)
	for p := range phases {
		require.Contains(t, []string{"training", "scoring", "uploading"}, p)
	}

	// The success report, and what the service made of it.
	var call struct {
		WorkerID string `json:"worker_id"`
		Job      struct {
			Attempt int `json:"attempt"`
		} `json:"job"`
		Body struct {
			Metrics           map[string]any            `json:"metrics"`
			RewardStats       rewardmodels.RewardStats  `json:"reward_stats"`
			ActionRewardStats *rewardmodels.RewardStats `json:"action_reward_stats"`
			ScoresKey         string                    `json:"scores_key"`
			ActionScoresKey   string                    `json:"action_scores_key"`
		} `json:"body"`
	}
	require.NoError(t, json.Unmarshal(succ[0].Raw, &call))
	rep := call.Body
	require.Equal(t, "w-1", call.WorkerID)
	require.Equal(t, 1, call.Job.Attempt)
	require.Equal(t, "jobs/"+owner+"/"+id+"/attempt-1/scores.jsonl", rep.ScoresKey)
	require.Equal(t, "jobs/"+owner+"/"+id+"/attempt-1/action_scores.jsonl", rep.ActionScoresKey)
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
	m := s.api.status(t, id)
	require.Equal(t, rewardmodels.StatusSucceeded, m.Status)
	require.Equal(t, jobs.ArtifactKey(owner, id), m.Success.ArtifactKey)

	// What is in the blob store, and the scores the service recorded.
	archive := filepath.Join(t.TempDir(), "a.tar.gz")
	require.NoError(t, s.blobs.GetToFile(ctx, m.Success.ArtifactKey, archive))
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
	loaded, err := s.api.store.LoadStreams(ctx, []string{events.ScoresStream(id)})
	require.NoError(t, err)
	require.NotEmpty(t, loaded[events.ScoresStream(id)], "the service appended the score events")
	raw, err = s.blobs.Get(ctx, rep.ActionScoresKey)
	require.NoError(t, err)
	trained := readJSONLines[jobs.ActionScore](t, raw)
	require.Len(t, trained, len(ds.ActionScoreItems))
	for i, a := range trained {
		require.Equal(t, ds.ActionScoreItems[i].StepID, a.StepID)
		require.InDelta(t, math.Tanh((a.Score-rep.ActionRewardStats.Mean)/(2*rep.ActionRewardStats.Std)), a.Credit, 1e-9)
	}
	require.NoDirExists(t, filepath.Join(s.data, "worker", "jobs", id, "attempt-1"), "job scratch is removed")

	// A duplicate delivery only wakes the worker: the queue has nothing,
	// and nothing is trained again.
	heartbeats := len(s.api.requestsOf(jobs.KindTrain, "/beat"))
	before := len(s.api.requests("/jobs/train/claim"))
	publish(t, pub, jobs.TopicTrain, id, s.api.trainMessage(id))
	s.api.waitFor("/jobs/train/claim", before+1, time.Minute)

	// Scoring one trace with the uploaded checkpoint: the same texts get
	// the same scores and credit as at training time.
	traceID := s.api.traces[0]
	run, err := s.api.cmds.RequestScoring.Handle(ctx, commands.RequestScoring{Actor: s.api.owner, TraceID: traceID, ModelID: id})
	require.NoError(t, err)
	publish(t, pub, jobs.TopicScore, run.RunID, jobs.ScoreJob{RunID: run.RunID, TraceID: traceID, ModelID: id, OwnerID: owner})
	fin := s.api.waitFor("/jobs/score/"+run.RunID+"/finish", 1, time.Minute)
	require.Equal(t, http.StatusOK, fin[0].Status, string(fin[0].Raw))
	require.Equal(t, map[string]any{"worker_id": "w-1", "job": map[string]any{"run_id": run.RunID, "trace_id": traceID, "model_id": id, "owner_id": owner}},
		s.api.requests("/jobs/score/" + run.RunID + "/claim")[0].Body)
	var f struct {
		Body struct {
			ActionScores []jobs.ActionScore `json:"action_scores"`
		} `json:"body"`
		Error string `json:"error"`
	}
	require.NoError(t, json.Unmarshal(fin[0].Raw, &f))
	require.Equal(t, "", f.Error)
	byStep := map[string]jobs.ActionScore{}
	for _, a := range trained {
		byStep[a.StepID] = a
	}
	require.NotEmpty(t, f.Body.ActionScores)
	for _, a := range f.Body.ActionScores {
		want, ok := byStep[a.StepID]
		require.True(t, ok, "step %s was an action item at training time", a.StepID)
		require.Equal(t, traceID, a.TraceID)
		require.InDelta(t, want.Score, a.Score, 1e-5)
		require.InDelta(t, want.Credit, a.Credit, 1e-5)
	}
	entries, err := os.ReadDir(filepath.Join(s.data, "worker", "checkpoints"))
	require.NoError(t, err)
	require.Len(t, entries, 1, "the checkpoint is cached once")

	// A duplicate score message is skipped too.
	publish(t, pub, jobs.TopicScore, run.RunID, jobs.ScoreJob{RunID: run.RunID, TraceID: traceID, ModelID: id, OwnerID: owner})
	dupRun := s.api.waitFor("/jobs/score/"+run.RunID+"/claim", 2, time.Minute)
	require.Equal(t, http.StatusConflict, dupRun[1].Status)

	stop()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	require.Len(t, s.api.requestsOf(jobs.KindTrain, "/finish"), 1, "no second training")
	require.Len(t, s.api.requestsOf(jobs.KindTrain, "/beat"), heartbeats, "no heartbeat after the duplicate")
	require.Len(t, s.api.requests("/jobs/score/"+run.RunID+"/finish"), 1)
	require.Empty(t, s.api.requestsOf(jobs.KindTrain, "/fail"))
}

// A base model the hub cannot serve fails the job; /failed carries the end of
// the job's log, which ends with the hub's error, and the model fails with it.
func TestTrainFailureReportsLogTail(t *testing.T) {
	s := newSetup(t)
	hubSrv := httptest.NewServer(http.NotFoundHandler())
	defer hubSrv.Close()
	cfg := s.config(t, "w-2")
	cfg.Hub = &hub.Client{Endpoint: hubSrv.URL, CacheDir: filepath.Join(s.data, "models"), HTTP: hubSrv.Client()}
	w, err := New(cfg)
	require.NoError(t, err)
	id, _ := s.api.queueTraining(t, "Qwen/Qwen3-0.6B")

	require.True(t, w.HandleTrain(context.Background(), mustJSON(t, s.api.trainMessage(id))))
	failed := s.api.requests("/jobs/train/" + id + "/fail")
	require.Len(t, failed, 1)
	require.Equal(t, http.StatusOK, failed[0].Status)
	require.Empty(t, s.api.requestsOf(jobs.KindTrain, "/finish"))
	msg := failed[0].Body["error"].(string)
	require.LessOrEqual(t, len([]rune(msg)), ErrorTailChars)
	first, _, _ := strings.Cut(msg, "\n")
	require.Equal(t, "training failed: base model Qwen/Qwen3-0.6B: hub: Qwen/Qwen3-0.6B@main has no config.json: not found", first,
		"the first line says what happened")
	require.Contains(t, msg, "claimed training job")
	require.Contains(t, msg, "Qwen/Qwen3-0.6B")
	last := strings.TrimSpace(msg[strings.LastIndex(strings.TrimSpace(msg), "\n")+1:])
	require.Contains(t, last, "training failed")
	require.Contains(t, last, "hub: Qwen/Qwen3-0.6B@main has no config.json: not found")
	require.Equal(t, "w-2", failed[0].Body["worker_id"])
	require.Equal(t, 1.0, failed[0].Body["job"].(map[string]any)["attempt"])
	require.Equal(t, rewardmodels.StatusFailed, s.api.status(t, id).Status)
	evs, err := s.api.cmds.Streams.ModelEvents(context.Background(), s.api.owner.UserID, id)
	require.NoError(t, err)
	require.Contains(t, string(evs[len(evs)-1].Payload), "has no config.json", "the model's error is the log's end")

	// The duplicate: 409 → skipped, acknowledged, nothing reported.
	require.True(t, w.HandleTrain(context.Background(), mustJSON(t, s.api.trainMessage(id))))
	require.Equal(t, http.StatusConflict, s.api.requests("/jobs/train/" + id + "/claim")[1].Status)
	require.Len(t, s.api.requestsOf(jobs.KindTrain, "/fail"), 1)

	// Malformed messages are dropped (acknowledged) without calling the API.
	n := len(s.api.requests(""))
	require.True(t, w.HandleTrain(context.Background(), []byte(`{"model_id":"../x","attempt":1}`)))
	require.True(t, w.HandleTrain(context.Background(), []byte(`not json`)))
	require.True(t, w.Handle(jobs.TopicScore)(context.Background(), []byte(`{}`)))
	require.Len(t, s.api.requests(""), n)
}

// A lease that expires mid-training (the API's sweep requeued the model for
// another worker) makes the next heartbeat a 409, which stops the job:
// nothing is uploaded or reported.
func TestLeaseLostStopsWithoutReport(t *testing.T) {
	s := newSetup(t)
	id, _ := s.api.queueTraining(t, s.base)
	cfg := s.config(t, "w-3")
	var once sync.Once
	cfg.TrainOptions = func(o *train.Options) {
		progress := o.Progress
		o.Progress = func(step, total int, loss, tps float64) {
			once.Do(func() {
				// What the lease sweep does once the lease ran out.
				_, err := s.api.cmds.ExpireLease.Handle(context.Background(), commands.ExpireLease{ModelID: id, Now: time.Now().Add(time.Hour)})
				require.NoError(t, err)
			})
			progress(step, total, loss, tps)
			time.Sleep(300 * time.Millisecond) // the heartbeat's 409 arrives mid-training
		}
	}
	w, err := New(cfg)
	require.NoError(t, err)

	require.True(t, w.HandleTrain(context.Background(), mustJSON(t, s.api.trainMessage(id))))
	hbs := s.api.requests("/jobs/train/" + id + "/beat")
	require.NotEmpty(t, hbs)
	require.Equal(t, http.StatusConflict, hbs[len(hbs)-1].Status)
	require.Empty(t, s.api.requestsOf(jobs.KindTrain, "/finish"))
	require.Empty(t, s.api.requestsOf(jobs.KindTrain, "/fail"))
	_, err = s.blobs.Get(context.Background(), jobs.ArtifactKey(s.api.owner.UserID, id))
	require.ErrorIs(t, err, blob.ErrNotFound, "nothing was uploaded")
	m := s.api.status(t, id)
	require.Equal(t, rewardmodels.StatusQueued, m.Status, "the lost run went back to the queue")
	require.Len(t, m.Lost, 1)
}

// Shutdown mid-training: the job stops, success is not reported, and the
// attempt is handed back — the model is queued again (not failed) and
// another worker pulls it and trains it to success.
func TestShutdownMidTrainingHandsTheJobBack(t *testing.T) {
	s := newSetup(t)
	id, _ := s.api.queueTraining(t, s.base)
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
	claim, err := s.api.client("w-4").ClaimNextTraining(context.Background(), "worker")
	require.NoError(t, err)
	require.NotNil(t, claim)
	require.Equal(t, id, claim.ModelID)
	require.False(t, w.RunTraining(ctx, claim))
	require.Empty(t, s.api.requestsOf(jobs.KindTrain, "/finish"))
	require.Empty(t, s.api.requestsOf(jobs.KindTrain, "/fail"), "a stop is no failure")
	back := s.api.requests("/jobs/train/" + id + "/handback")
	require.Len(t, back, 1)
	require.Equal(t, http.StatusOK, back[0].Status)
	require.Contains(t, back[0].Body["reason"], "worker w-4 stopped (shutting down) during training")
	m := s.api.status(t, id)
	require.Equal(t, rewardmodels.StatusQueued, m.Status)
	require.Equal(t, 1, m.Attempt, "the same attempt, not a retry")
	require.Empty(t, m.Lost)

	// Another worker pulls it and trains it to success.
	w2, err := New(s.config(t, "w-5"))
	require.NoError(t, err)
	claim, err = s.api.client("w-5").ClaimNextTraining(context.Background(), "worker")
	require.NoError(t, err)
	require.NotNil(t, claim)
	require.True(t, w2.RunTraining(context.Background(), claim))
	m = s.api.status(t, id)
	require.Equal(t, rewardmodels.StatusSucceeded, m.Status)
	require.Equal(t, "w-5", m.WorkerID)
	require.Len(t, s.api.requestsOf(jobs.KindTrain, "/finish"), 1)
}

// A model recorded with action stats whose archive lacks
// action_reward_stats.json (a damaged checkpoint): scoring reports the error
// and the run fails with it.
func TestScoringWithoutActionStatsReportsError(t *testing.T) {
	s := newSetup(t)
	w, err := New(s.config(t, "w-5"))
	require.NoError(t, err)
	defer w.Close()
	ctx := context.Background()
	id, _ := s.api.queueTraining(t, s.base)
	job, err := s.api.cmds.ClaimTraining.Handle(ctx, commands.ClaimTraining{WorkerID: "w-0", ModelID: id, Attempt: 1, Lease: time.Minute})
	require.NoError(t, err)
	dir := trainTiny(t)
	require.NoError(t, os.Remove(filepath.Join(dir, "model", "action_reward_stats.json")))
	archive := filepath.Join(t.TempDir(), "a.tar.gz")
	require.NoError(t, WriteArchive(filepath.Join(dir, "model"), archive))
	require.NoError(t, s.blobs.PutFile(ctx, job.ArtifactKey, archive))
	_, err = s.api.cmds.CompleteTraining.Handle(ctx, commands.CompleteTraining{WorkerID: "w-0", ModelID: id, Attempt: 1,
		Metrics: json.RawMessage(`{"eval_pairs":0,"action_scoring_version":1}`), RewardStats: json.RawMessage(`{"mean":0,"std":1,"count":1}`),
		ActionStats: json.RawMessage(`{"mean":0,"std":1,"count":1}`)})
	require.NoError(t, err)

	traceID := s.api.traces[0]
	run, err := s.api.cmds.RequestScoring.Handle(ctx, commands.RequestScoring{Actor: s.api.owner, TraceID: traceID, ModelID: id})
	require.NoError(t, err)
	require.True(t, w.Handle(jobs.TopicScore)(ctx, mustJSON(t, jobs.ScoreJob{RunID: run.RunID, TraceID: traceID, ModelID: id, OwnerID: s.api.owner.UserID})))
	require.Empty(t, s.api.requests("/jobs/score/"+run.RunID+"/finish"))
	fin := s.api.requests("/jobs/score/" + run.RunID + "/fail")
	require.Len(t, fin, 1)
	require.Equal(t, http.StatusOK, fin[0].Status)
	require.Contains(t, fin[0].Body["error"], "action_reward_stats.json")
	require.Nil(t, fin[0].Body["body"], "a failure reports no scores")
	loaded, err := s.api.store.LoadStreams(ctx, []string{events.ScoringStream(traceID, id)})
	require.NoError(t, err)
	evs := loaded[events.ScoringStream(traceID, id)]
	require.Equal(t, events.ScoringRunFailed, evs[len(evs)-1].Type)
	require.Contains(t, string(evs[len(evs)-1].Payload), "action_reward_stats.json")
}

// stopOnRead is the real blob store; reading key first stops the worker
// (as SIGTERM does: the job's context ends), so the job is interrupted
// after its claim, at a known point.
type stopOnRead struct {
	blob.Store
	key  string
	stop context.CancelFunc
}

func (s stopOnRead) Get(ctx context.Context, key string) ([]byte, error) {
	if key == s.key {
		s.stop()
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return s.Store.Get(ctx, key)
}

// A worker stopped mid-scoring hands the run back instead of failing it:
// the run is queued again (scoring_run.requeued.v1), and the next worker
// scores it to success.
func TestShutdownMidScoringHandsTheRunBack(t *testing.T) {
	s := newSetup(t)
	ctx := context.Background()
	id, _ := s.api.queueTraining(t, s.base)
	trainer, err := New(s.config(t, "w-train"))
	require.NoError(t, err)
	claim, err := s.api.client("w-train").ClaimNextTraining(ctx, "worker")
	require.NoError(t, err)
	require.True(t, trainer.RunTraining(ctx, claim))
	traceID := s.api.traces[0]
	run, err := s.api.cmds.RequestScoring.Handle(ctx, commands.RequestScoring{Actor: s.api.owner, TraceID: traceID, ModelID: id})
	require.NoError(t, err)
	msg := mustJSON(t, jobs.ScoreJob{RunID: run.RunID, TraceID: traceID, ModelID: id, OwnerID: s.api.owner.UserID})

	jobCtx, stop := context.WithCancel(ctx)
	defer stop()
	cfg := s.config(t, "w-stop")
	cfg.DataDir = t.TempDir()
	loaded, err := s.api.store.LoadStreams(ctx, []string{events.ScoringStream(traceID, id)})
	require.NoError(t, err)
	var req events.ScoringRunRequestedV1
	require.NoError(t, loaded[events.ScoringStream(traceID, id)][0].Decode(&req))
	cfg.Blobs = stopOnRead{Store: s.blobs, key: req.ItemsKey, stop: stop}
	w, err := New(cfg)
	require.NoError(t, err)
	defer w.Close()
	require.False(t, w.Handle(jobs.TopicScore)(jobCtx, msg), "an interrupted job is not acknowledged")
	require.Empty(t, s.api.requests("/jobs/score/"+run.RunID+"/finish"), "a stop is no failure")
	back := s.api.requests("/jobs/score/" + run.RunID + "/handback")
	require.Len(t, back, 1)
	require.Equal(t, http.StatusOK, back[0].Status, string(back[0].Raw))
	loaded, err = s.api.store.LoadStreams(ctx, []string{events.ScoringStream(traceID, id)})
	require.NoError(t, err)
	evs := loaded[events.ScoringStream(traceID, id)]
	require.Equal(t, events.ScoringRunRequeued, evs[len(evs)-1].Type)
	var p events.ScoringRunRequeuedV1
	require.NoError(t, evs[len(evs)-1].Decode(&p))
	require.Equal(t, events.ScoringRunRequeuedV1{RunID: run.RunID, TraceID: traceID, ModelID: id, WorkerID: "w-stop",
		Reason: events.RequeueHandedBack, Detail: "worker w-stop is shutting down"}, p)

	// The next worker scores it.
	w2, err := New(s.config(t, "w-next"))
	require.NoError(t, err)
	defer w2.Close()
	require.True(t, w2.Handle(jobs.TopicScore)(ctx, msg))
	fin := s.api.requests("/jobs/score/" + run.RunID + "/finish")
	require.Len(t, fin, 1)
	require.Equal(t, http.StatusOK, fin[0].Status, string(fin[0].Raw))
	require.Empty(t, fin[0].Body["error"])
	loaded, err = s.api.store.LoadStreams(ctx, []string{events.ScoringStream(traceID, id)})
	require.NoError(t, err)
	evs = loaded[events.ScoringStream(traceID, id)]
	require.Equal(t, events.ScoringRunSucceeded, evs[len(evs)-1].Type)
}
