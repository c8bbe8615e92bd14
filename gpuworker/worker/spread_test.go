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
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/platform/bus"
	"github.com/criticml/critic/platform/llm/llmtest"
)

// overlap is a pair of task-model servers, one per GEPA run, whose answers
// wait until both runs have a call in flight at once (or a deadline
// passed): Overlapped says whether the two runs ever ran at the same time.
type overlap struct {
	mu         sync.Mutex
	inFlight   [2]int
	overlapped bool
	both       chan struct{}
	deadline   <-chan struct{} // closed once the wait is over
}

func newOverlap(t *testing.T, wait time.Duration) *overlap {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	t.Cleanup(cancel)
	return &overlap{both: make(chan struct{}), deadline: ctx.Done()}
}

func (o *overlap) handler(run int) func(llmtest.Request) llmtest.Reply {
	return func(r llmtest.Request) llmtest.Reply {
		o.mu.Lock()
		o.inFlight[run]++
		if o.inFlight[0] > 0 && o.inFlight[1] > 0 && !o.overlapped {
			o.overlapped = true
			close(o.both)
		}
		o.mu.Unlock()
		select {
		case <-o.both:
		case <-o.deadline:
		}
		o.mu.Lock()
		o.inFlight[run]--
		o.mu.Unlock()
		if strings.Contains(r.Messages[0].Content, "lookup") {
			return llmtest.Reply{Content: "the answer is right"}
		}
		return llmtest.Reply{Content: "no"}
	}
}

func (o *overlap) Overlapped() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.overlapped
}

// Two GEPA runs requested at once run on two workers at the same time, even
// when both jobs sit on the one partition the busy worker holds: a worker
// with a long job gives the topic's partitions up, the other worker takes
// the second run, and the first run's redelivery is refused by its claim.
func TestBusyWorkerLeavesTheNextGepaRunToAFreeWorker(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a broker and two workers")
	}
	g := newGepaWorld(t)
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
	created, err := kc.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{Topic: jobs.TopicGepa, NumPartitions: 1, ReplicationFactor: 1}}})
	require.NoError(t, err)
	require.NoError(t, created.Errors[jobs.TopicGepa])

	ov := newOverlap(t, 2*time.Minute)
	tasks := [2]*llmtest.Server{llmtest.New(t), llmtest.New(t)}
	var runs [2]string
	for i := range runs {
		tasks[i].Handle(ov.handler(i))
		task, refl, base, budget := "openai/task", "openai/reflection", tasks[i].URL, 14
		res, err := g.api.cmds.RequestGepaRun(context.Background(), g.api.owner, commands.RequestGepa{ModelID: g.modelID,
			TaskModel: &task, TaskAPIBase: &base, ReflectionModel: &refl, MaxMetricCalls: &budget})
		require.NoError(t, err)
		runs[i] = res.RunID
	}
	var wg sync.WaitGroup
	var failed atomic.Value
	for _, id := range []string{"w-a", "w-b"} {
		cfg := g.config(t, id)
		cfg.DataDir = t.TempDir()
		cfg.Brokers = broker.Addrs()
		cfg.Getenv = func(k string) string {
			switch k {
			case "OPENAI_BASE_URL":
				return g.refl.URL
			case "CRITIC_ALLOWED_API_BASES":
				return tasks[0].URL + "," + tasks[1].URL
			}
			return ""
		}
		cfg.ReleaseBusyAfter = 200 * time.Millisecond
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := Run(ctx, cfg); err != nil {
				failed.Store(err)
			}
		}()
	}
	// Both workers are in the group and it has settled: from here on only
	// a worker letting go moves the partition.
	waitStableGroup(t, ctx, broker.Addrs(), 2)
	publish(t, pub, jobs.TopicGepa, runs[0], jobs.GepaJob{RunID: runs[0], OwnerID: g.api.owner.UserID})
	claimed := func(run string) []request {
		var out []request
		for _, r := range g.api.requests("/jobs/gepa/" + run + "/claim") {
			if r.Status == http.StatusOK {
				out = append(out, r)
			}
		}
		return out
	}
	require.Eventually(t, func() bool { return len(claimed(runs[0])) == 1 }, 2*time.Minute, 50*time.Millisecond)
	publish(t, pub, jobs.TopicGepa, runs[1], jobs.GepaJob{RunID: runs[1], OwnerID: g.api.owner.UserID})

	for _, run := range runs {
		g.api.waitFor("/jobs/gepa/"+run+"/finish", 1, 3*time.Minute)
		st, _ := g.stream(t, run)
		require.Equal(t, rewardmodels.RunSucceeded, st.Status, run)
		require.Len(t, claimed(run), 1, "run %s was started once", run)
	}
	require.True(t, ov.Overlapped(), "the second run waited for the first instead of going to the free worker")
	require.NotEqual(t, claimed(runs[0])[0].Body["worker_id"], claimed(runs[1])[0].Body["worker_id"])
	var refused bool
	for _, r := range g.api.requests("/jobs/gepa/" + runs[0] + "/claim") {
		refused = refused || r.Status == http.StatusConflict
	}
	require.True(t, refused, "the first run's redelivery to the worker that took over its partition is refused by the claim")
	cancel()
	wg.Wait()
	require.Nil(t, failed.Load())
}

// waitStableGroup waits until the workers group holds every job consumer of
// n workers (without a step-label model) and is stable.
func waitStableGroup(t *testing.T, ctx context.Context, brokers []string, n int) {
	t.Helper()
	per := 0
	for _, topic := range jobs.Topics() {
		switch {
		case topic == jobs.TopicLabel, topic == jobs.TopicTrain: // no label model here; wake-ups are read in each worker's own group
		case shortJob(topic):
			per += DefaultShortJobs
		default:
			per++
		}
	}
	kc := &kafka.Client{Addr: kafka.TCP(brokers...)}
	require.Eventually(t, func() bool {
		res, err := kc.DescribeGroups(ctx, &kafka.DescribeGroupsRequest{GroupIDs: []string{jobs.ConsumerGroup}})
		if err != nil || len(res.Groups) != 1 {
			return false
		}
		g := res.Groups[0]
		return g.Error == nil && g.GroupState == "Stable" && len(g.Members) == n*per
	}, 2*time.Minute, 100*time.Millisecond, "the workers group never held %d stable members", n*per)
}
