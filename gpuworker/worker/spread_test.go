package worker

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain/events"
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

// gepaSpread is two GEPA runs of one model, each with a task-model server of
// its own, whose jobs share the one partition of the GEPA topic: whoever
// holds it holds both jobs unless it lets go.
type gepaSpread struct {
	g      *gepaWorld
	broker *bus.Embedded
	pub    *bus.Publisher
	tasks  [2]*llmtest.Server
	runs   [2]string
	wg     sync.WaitGroup
	failed atomic.Value
}

func newGepaSpread(t *testing.T, ctx context.Context) *gepaSpread {
	sp := &gepaSpread{g: newGepaWorld(t)}
	broker, err := bus.StartEmbedded(ctx, bus.EmbeddedConfig{})
	require.NoError(t, err)
	t.Cleanup(func() { broker.Close() })
	sp.broker = broker
	pub, err := bus.NewPublisher(bus.Config{Brokers: broker.Addrs(), TopicPartitions: 1}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { pub.Close() })
	sp.pub = pub
	kc := &kafka.Client{Addr: kafka.TCP(broker.Addrs()...)}
	created, err := kc.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{Topic: jobs.TopicGepa, NumPartitions: 1, ReplicationFactor: 1}}})
	require.NoError(t, err)
	require.NoError(t, created.Errors[jobs.TopicGepa])
	for i := range sp.runs {
		sp.tasks[i] = llmtest.New(t)
		task, refl, base, budget := "openai/task", "openai/reflection", sp.tasks[i].URL, 14
		res, err := sp.g.api.cmds.RequestGepaRun.Handle(context.Background(), commands.RequestGepaRun{Actor: sp.g.api.owner, Input: commands.RequestGepa{ModelID: sp.g.modelID,
			TaskModel: &task, TaskAPIBase: &base, ReflectionModel: &refl, MaxMetricCalls: &budget}})
		require.NoError(t, err)
		sp.runs[i] = res.RunID
	}
	return sp
}

// newOverlappingSpread is a gepaSpread whose runs' task-model calls wait
// until both runs have one in flight (newOverlap): ov says whether they did.
func newOverlappingSpread(t *testing.T, ctx context.Context) (*gepaSpread, *overlap) {
	sp := newGepaSpread(t, ctx)
	ov := newOverlap(t, 2*time.Minute)
	for i, task := range sp.tasks {
		task.Handle(ov.handler(i))
	}
	return sp, ov
}

// start runs a worker until ctx ends; a long job lets go after 200 ms.
func (sp *gepaSpread) start(t *testing.T, ctx context.Context, id string) {
	cfg := sp.g.config(t, id)
	cfg.DataDir = t.TempDir()
	cfg.Brokers = sp.broker.Addrs()
	cfg.Getenv = func(k string) string {
		switch k {
		case "OPENAI_BASE_URL":
			return sp.g.refl.URL
		case "CRITIC_ALLOWED_API_BASES":
			return sp.tasks[0].URL + "," + sp.tasks[1].URL
		}
		return ""
	}
	cfg.ReleaseBusyAfter = 200 * time.Millisecond
	sp.wg.Go(func() {
		if err := Run(ctx, cfg); err != nil {
			sp.failed.Store(err)
		}
	})
}

func (sp *gepaSpread) publish(t *testing.T, i int) {
	publish(t, sp.pub, jobs.TopicGepa, sp.runs[i], jobs.GepaJob{RunID: sp.runs[i], OwnerID: sp.g.api.owner.UserID})
}

// claims are run i's claim requests answered with status.
func (sp *gepaSpread) claims(i, status int) []request {
	var out []request
	for _, r := range sp.g.api.requests("/jobs/gepa/" + sp.runs[i] + "/claim") {
		if r.Status == status {
			out = append(out, r)
		}
	}
	return out
}

// requireNotRedelivered checks that no run's message reached a worker again
// (a redelivery's claim is refused with 409); why says what that would mean.
func (sp *gepaSpread) requireNotRedelivered(t *testing.T, why string) {
	for i := range sp.runs {
		require.Empty(t, sp.claims(i, http.StatusConflict), "run %d's message was delivered again: %s", i, why)
	}
}

// finish waits for both runs to succeed, each started once, then stops the
// workers (cancel) and checks they stopped cleanly.
func (sp *gepaSpread) finish(t *testing.T, cancel context.CancelFunc) {
	for i, run := range sp.runs {
		sp.g.api.waitFor("/jobs/gepa/"+run+"/finish", 1, 3*time.Minute)
		st, _ := sp.g.stream(t, run)
		require.Equal(t, rewardmodels.RunSucceeded, st.Status, run)
		require.Len(t, sp.claims(i, http.StatusOK), 1, "run %s was started once", run)
	}
	cancel()
	sp.wg.Wait()
	require.Nil(t, sp.failed.Load())
}

// Two GEPA runs requested at once run on two workers at the same time, even
// when both jobs sit on the one partition the busy worker holds: a worker
// with a long job gives the topic's partitions up, the other worker takes
// the second run, and the first run's redelivery is refused by its claim.
func TestBusyWorkerLeavesTheNextGepaRunToAFreeWorker(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a broker and two workers")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	sp, ov := newOverlappingSpread(t, ctx)
	sp.start(t, ctx, "w-a")
	sp.start(t, ctx, "w-b")
	// Both workers are in the group and it has settled: from here on only
	// a worker letting go moves the partition.
	waitStableGroup(t, ctx, sp.broker.Addrs(), 2)
	sp.publish(t, 0)
	require.Eventually(t, func() bool { return len(sp.claims(0, http.StatusOK)) == 1 }, 2*time.Minute, 50*time.Millisecond)
	sp.publish(t, 1)

	sp.finish(t, cancel)
	require.True(t, ov.Overlapped(), "the second run waited for the first instead of going to the free worker")
	require.NotEqual(t, sp.claims(0, http.StatusOK)[0].Body["worker_id"], sp.claims(1, http.StatusOK)[0].Body["worker_id"])
	require.NotEmpty(t, sp.claims(0, http.StatusConflict), "the first run's redelivery to the worker that took over its partition is refused by the claim")
}

// A worker alone in the group keeps the topic's partitions through a long
// job: leaving would move the job queued behind it nowhere, and its rejoin
// cost the next job a rebalance. So the running job's message is
// acknowledged, not redelivered (no refused claim), and the second run
// starts on the same worker once the first ends.
func TestLoneWorkerKeepsItsPartitionsThroughALongJob(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a broker and a worker")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	sp := newGepaSpread(t, ctx)
	slowTaskModels(sp)
	sp.start(t, ctx, "w-alone")
	waitStableGroup(t, ctx, sp.broker.Addrs(), 1)
	sp.publish(t, 0)
	sp.publish(t, 1)

	sp.finish(t, cancel)
	sp.requireNotRedelivered(t, "the lone worker left the group")
	at := func(run, typ string) time.Time {
		_, evs := sp.g.stream(t, run)
		for _, e := range evs {
			if e.Type == typ {
				return e.RecordedAt
			}
		}
		t.Fatalf("run %s has no %s", run, typ)
		return time.Time{}
	}
	require.False(t, at(sp.runs[1], events.GepaRunStarted).Before(at(sp.runs[0], events.GepaRunSucceeded)), "one worker runs one long job at a time")
}

// A busy worker keeps its partitions while nothing waits behind its job,
// even with another worker in the group: leaving would move no job, and its
// rejoin cost every topic of the group a rebalance — with two workers
// scoring, every batch did. So each run's message is acknowledged, not
// redelivered to the other worker (no refused claim).
func TestBusyWorkerWithNothingBehindKeepsItsPartitions(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a broker and two workers")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	sp := newGepaSpread(t, ctx)
	slowTaskModels(sp)
	sp.start(t, ctx, "w-a")
	sp.start(t, ctx, "w-b")
	waitStableGroup(t, ctx, sp.broker.Addrs(), 2)
	// One run at a time: the second is published once the first is done,
	// so neither has a job behind it. Had the first's message been left
	// uncommitted, it would reach the partition's holder again before the
	// second.
	sp.publish(t, 0)
	sp.g.api.waitFor("/jobs/gepa/"+sp.runs[0]+"/finish", 1, 3*time.Minute)
	sp.publish(t, 1)

	sp.finish(t, cancel)
	sp.requireNotRedelivered(t, "its worker left the group with nothing behind the job")
}

// slowTaskModels makes each task-model call of both runs take 150 ms: a
// run's 14 metric calls outlast the 200 ms after which a worker asks
// whether to let go.
func slowTaskModels(sp *gepaSpread) {
	for _, task := range sp.tasks {
		task.Handle(func(r llmtest.Request) llmtest.Reply {
			if strings.Contains(r.Messages[0].Content, "lookup") {
				return llmtest.Reply{Content: "the answer is right"}.WithDelay(150 * time.Millisecond)
			}
			return llmtest.Reply{Content: "no"}.WithDelay(150 * time.Millisecond)
		})
	}
}

// A worker that joins while a lone worker runs a long job takes the job
// queued behind it: the rebalance its join starts gives it the partition,
// or the busy worker, asking again while its job runs, sees the peer and
// lets go (TestLongJobLetsGoOnceAPeerAppears drives that question).
func TestWorkerThatJoinsTakesTheJobQueuedBehindALongOne(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a broker and two workers")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	sp, ov := newOverlappingSpread(t, ctx)
	sp.start(t, ctx, "w-first")
	waitStableGroup(t, ctx, sp.broker.Addrs(), 1)
	sp.publish(t, 0)
	sp.publish(t, 1)
	require.Eventually(t, func() bool { return len(sp.claims(0, http.StatusOK)) == 1 }, 2*time.Minute, 50*time.Millisecond)
	time.Sleep(time.Second) // the lone worker has decided to keep its partitions (every 200 ms)
	require.Empty(t, sp.claims(1, http.StatusOK), "the second run waits behind the first on the lone worker")
	sp.start(t, ctx, "w-joins")

	sp.finish(t, cancel)
	require.True(t, ov.Overlapped(), "the second run waited for the first instead of going to the worker that joined")
	require.Equal(t, "w-joins", sp.claims(1, http.StatusOK)[0].Body["worker_id"])
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

// A long job keeps asking whether to keep its topic's partitions (a job
// waits behind it and another worker consumes the topic: consume), and lets
// them go the first time the answer is no; while it is yes it never lets
// go. (Which member a rebalance gives the partition to is the balancer's
// choice, so the tests above cannot force a lone worker to keep it when
// another joins: this one drives the question itself.)
func TestLongJobLetsGoOnceAPeerAppears(t *testing.T) {
	w := &Worker{cfg: Config{ReleaseBusyAfter: 5 * time.Millisecond}, log: slog.New(slog.DiscardHandler)}
	var asked atomic.Int32
	released := make(chan struct{})
	finished, gaveUp := w.runReleasing(context.Background(), jobs.TopicGepa, nil,
		func(context.Context, []byte) bool { <-released; return true },
		func() bool { return asked.Add(1) < 4 }, // a peer joins before the fourth question
		func() { close(released) })
	require.True(t, finished)
	require.True(t, gaveUp)
	require.EqualValues(t, 4, asked.Load())

	done := make(chan struct{})
	time.AfterFunc(100*time.Millisecond, func() { close(done) })
	finished, gaveUp = w.runReleasing(context.Background(), jobs.TopicGepa, nil,
		func(context.Context, []byte) bool { <-done; return true },
		func() bool { return true },
		func() { t.Error("a worker told to keep its partitions gave them up") })
	require.True(t, finished)
	require.False(t, gaveUp)
}
