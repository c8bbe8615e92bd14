package worker

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/platform/bus"
	"github.com/criticml/critic/platform/llm"
	"github.com/criticml/critic/platform/llm/llmtest"
)

// Two feedback extractions requested at once run on two workers at the
// same time, even when both jobs sit on the one partition the busy worker
// holds: the worker extracting the first lets the topic's partitions go,
// the other worker skips the first job's redelivery (its claim answers
// that a live worker holds it) and extracts the second.
func TestBusyWorkerLeavesTheNextExtractionToAFreeWorker(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a broker and two workers")
	}
	blobs, err := blob.NewLocal(t.TempDir())
	require.NoError(t, err)
	api := newServiceWith(t, blobs, commands.WithFeedbackModel("openai/test", ""))
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	broker, err := bus.StartEmbedded(ctx, bus.EmbeddedConfig{})
	require.NoError(t, err)
	defer broker.Close()
	// One partition: whoever owns it holds both jobs unless it lets go.
	pub, err := bus.NewPublisher(bus.Config{Brokers: broker.Addrs(), TopicPartitions: 1}, nil)
	require.NoError(t, err)
	defer pub.Close()
	kc := &kafka.Client{Addr: kafka.TCP(broker.Addrs()...)}
	created, err := kc.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{Topic: jobs.TopicExtract, NumPartitions: 1, ReplicationFactor: 1}}})
	require.NoError(t, err)
	require.NoError(t, created.Errors[jobs.TopicExtract])

	// Traces supervised only by what the user said next: their extraction
	// has to ask the feedback model.
	imp, err := api.cmds.ImportTraces.Handle(ctx, commands.ImportTraces{Actor: api.owner, Input: commands.ImportTracesInput{Format: "stash", Data: []byte(
		`{"id":"x","steps":[{"role":"user","content":"Sort 3,1,2"},{"role":"assistant","content":"3,2,1"},{"role":"user","content":"No, that's the wrong order."}]}` + "\n" +
			`{"id":"y","steps":[{"role":"user","content":"Sort b,a"},{"role":"assistant","content":"a,b"},{"role":"user","content":"Thanks, perfect."}]}`)}})
	require.NoError(t, err)
	var models [2]string
	for i := range models {
		req, err := api.cmds.RequestTraining.Handle(ctx, commands.RequestTraining{Actor: api.owner, Input: commands.RequestTrainingInput{Name: "m", TraceIDs: imp.TraceIDs}})
		require.NoError(t, err)
		models[i] = req.ModelID
	}

	// Each worker has its own feedback-model server; their answers wait
	// until both workers have a call in flight at once.
	ov := newOverlap(t, 2*time.Minute)
	var wg sync.WaitGroup
	var failed atomic.Value
	for i, id := range []string{"w-a", "w-b"} {
		srv := llmtest.New(t)
		srv.Handle(ov.handler(i))
		cfg := Config{Client: api.client(id), Blobs: blobs, DataDir: t.TempDir(), Log: testLogger(t), Brokers: broker.Addrs(),
			Feedback:         llm.New(llm.Model{Provider: llm.ProviderOpenAI, Name: "test", APIBase: srv.URL}, llm.Options{MaxRetries: llm.NoRetries}),
			ReleaseBusyAfter: 200 * time.Millisecond}
		wg.Go(func() {
			if err := Run(ctx, cfg); err != nil {
				failed.Store(err)
			}
		})
	}
	waitStableGroup(t, ctx, broker.Addrs(), 2)
	claimed := func(model string) []request {
		var out []request
		for _, r := range api.requests("/jobs/extract/" + model + "/claim") {
			if r.Status == http.StatusOK {
				out = append(out, r)
			}
		}
		return out
	}
	publish(t, pub, jobs.TopicExtract, models[0], jobs.ExtractJob{ModelID: models[0], Attempt: 1, OwnerID: api.owner.UserID})
	require.Eventually(t, func() bool { return len(claimed(models[0])) == 1 }, 2*time.Minute, 50*time.Millisecond)
	publish(t, pub, jobs.TopicExtract, models[1], jobs.ExtractJob{ModelID: models[1], Attempt: 1, OwnerID: api.owner.UserID})

	for _, m := range models {
		// It ends reported: finished, or failed (the feedback model's answers
		// here are no findings).
		require.Eventually(t, func() bool {
			return len(api.requests("/jobs/extract/"+m+"/finish"))+len(api.requests("/jobs/extract/"+m+"/fail")) == 1
		}, 3*time.Minute, 50*time.Millisecond)
		require.Len(t, claimed(m), 1, "model %s was claimed once", m)
	}
	require.True(t, ov.Overlapped(), "the second extraction waited for the first instead of going to the free worker")
	require.NotEqual(t, claimed(models[0])[0].Body["worker_id"], claimed(models[1])[0].Body["worker_id"])
	var refused bool
	for _, r := range api.requests("/jobs/extract/" + models[0] + "/claim") {
		refused = refused || r.Status == http.StatusConflict
	}
	require.True(t, refused, "the first extraction's redelivery to the worker that took over its partition is refused (held) and skipped")
	cancel()
	wg.Wait()
	require.Nil(t, failed.Load())
}

// A worker stopped (SIGTERM cancels its context) in the middle of an
// extraction hands it back at once: the model stays queued with nobody
// holding the extraction (reward_model.extraction_requeued.v1, reason
// handed_back), and another worker's claim succeeds right away instead of
// after the 30 s lease.
func TestStoppingWorkerHandsItsExtractionBack(t *testing.T) {
	t.Parallel()
	api, blobs, modelID := extractionQueued(t)
	ctx := context.Background()

	jctx, stop := context.WithCancel(ctx)
	defer stop()
	srv := llmtest.New(t)
	srv.Handle(func(llmtest.Request) llmtest.Reply {
		stop() // SIGTERM while the feedback model is being asked
		<-time.After(100 * time.Millisecond)
		return llmtest.Status(500)
	})
	w, err := New(Config{Client: api.client("w-stopping"), Blobs: blobs, DataDir: t.TempDir(), Log: testLogger(t),
		Feedback: llm.New(llm.Model{Provider: llm.ProviderOpenAI, Name: "test", APIBase: srv.URL}, llm.Options{MaxRetries: llm.NoRetries})})
	require.NoError(t, err)
	msg := mustJSON(t, jobs.ExtractJob{ModelID: modelID, Attempt: 1, OwnerID: api.owner.UserID})
	require.False(t, w.Handle(jobs.TopicExtract)(jctx, msg), "an interrupted extraction is not done")

	require.Len(t, api.requests("/jobs/extract/"+modelID+"/handback"), 1)
	require.Empty(t, api.requests("/jobs/extract/"+modelID+"/finish"), "a stopped worker does not finish the model")
	require.Empty(t, api.requests("/jobs/extract/"+modelID+"/fail"), "a stopped worker does not fail the model")
	m := api.status(t, modelID)
	require.Equal(t, "queued", string(m.Status))
	require.Nil(t, m.Extraction, "nobody holds the extraction")
	_, err = api.client("w-next").ClaimExtraction(ctx, modelID, 1)
	require.NoError(t, err, "the next worker claims it at once")
}

// A worker stopped while the API answers its claim — the claim recorded,
// the answer not yet read — still learns it holds the extraction and hands
// it back at once, instead of leaving the model to the lease sweep.
func TestWorkerStoppedDuringItsClaimHandsTheExtractionBack(t *testing.T) {
	t.Parallel()
	api, blobs, modelID := extractionQueued(t)
	ctx := context.Background()

	jctx, stop := context.WithCancel(ctx)
	defer stop()
	api.mu.Lock()
	api.answered = func(path string) {
		if strings.HasSuffix(path, "/claim") {
			stop() // SIGTERM after the claim is recorded, before its answer arrives
		}
	}
	api.mu.Unlock()
	srv := llmtest.New(t)
	w, err := New(Config{Client: api.client("w-stopping"), Blobs: blobs, DataDir: t.TempDir(), Log: testLogger(t),
		Feedback: llm.New(llm.Model{Provider: llm.ProviderOpenAI, Name: "test", APIBase: srv.URL}, llm.Options{MaxRetries: llm.NoRetries})})
	require.NoError(t, err)
	msg := mustJSON(t, jobs.ExtractJob{ModelID: modelID, Attempt: 1, OwnerID: api.owner.UserID})
	require.False(t, w.Handle(jobs.TopicExtract)(jctx, msg), "an interrupted extraction is not done")

	require.Len(t, api.requests("/jobs/extract/"+modelID+"/claim"), 1)
	require.Len(t, api.requests("/jobs/extract/"+modelID+"/handback"), 1, "the claimed extraction is handed back")
	require.Empty(t, srv.Requests(), "a stopping worker does not start the extraction it claimed")
	m := api.status(t, modelID)
	require.Equal(t, "queued", string(m.Status))
	require.Nil(t, m.Extraction, "nobody holds the extraction")
	_, err = api.client("w-next").ClaimExtraction(ctx, modelID, 1)
	require.NoError(t, err, "the next worker claims it at once")
}

// extractionQueued is a worker service whose deployment extracts feedback
// and whose one model, over one trace with a user's correction, waits for
// its extraction.
func extractionQueued(t *testing.T) (*service, blob.Store, string) {
	t.Helper()
	blobs, err := blob.NewLocal(t.TempDir())
	require.NoError(t, err)
	api := newServiceWith(t, blobs, commands.WithFeedbackModel("openai/test", ""))
	ctx := context.Background()
	imp, err := api.cmds.ImportTraces.Handle(ctx, commands.ImportTraces{Actor: api.owner, Input: commands.ImportTracesInput{Format: "stash", Data: []byte(
		`{"id":"x","steps":[{"role":"user","content":"Sort 3,1,2"},{"role":"assistant","content":"3,2,1"},{"role":"user","content":"No, that's the wrong order."}]}`)}})
	require.NoError(t, err)
	req, err := api.cmds.RequestTraining.Handle(ctx, commands.RequestTraining{Actor: api.owner, Input: commands.RequestTrainingInput{Name: "m", TraceIDs: imp.TraceIDs}})
	require.NoError(t, err)
	return api, blobs, req.ModelID
}
