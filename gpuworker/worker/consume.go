package worker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/gpuworker/model"
	"github.com/criticml/critic/platform/bus"
	"github.com/criticml/critic/platform/requestid"
)

// How a job topic is consumed so that a busy worker never holds back a job
// a free worker could run (README "Workers: who takes which job"):
//
//   - long jobs (minutes: GEPA, scoring, evaluator candidates, feedback
//     extraction) release:
//     once one has run ReleaseBusyAfter while a job waits behind it and
//     another worker consumes the topic, the consumer leaves the topic's
//     group, its partitions move to the other workers, and the jobs queued
//     behind it run there. The job's message stays uncommitted, so a crash
//     before the claim loses nothing; its redelivery is refused by the
//     claim (the run is no longer queued). A worker with nothing behind its
//     job, or alone on the topic, keeps its partitions (runReleasing).
//   - short jobs (seconds: titles, assessments, automatic scoring) run
//     ShortJobs at a time, each its own group member, so one slow model
//     call does not stop the kind; leaving the group per job would cost a
//     rebalance of every topic of the group for each one.
//   - labels run LabelJobs at a time; training is pulled (trainLoop), and
//     its wake-up messages reach every worker (WakeGroup).
//   - feedback extraction releases like the long jobs: a redelivered
//     extraction whose lease another worker holds is skipped (committed),
//     and the API's lease sweep requeues and republishes one whose holder
//     died, so it resumes on the next free worker with its findings kept.
//
// Each kind says which in its Consume field.
func releasesWhileBusy(topic string) bool {
	k, ok := byTopic[topic]
	return ok && k.consume == releasing
}

func shortJob(topic string) bool {
	k, ok := byTopic[topic]
	return ok && k.consume == short
}

// Handle is what a job topic's consumer runs for each message (nil for a
// topic this worker does not know): a kind's runner, or the training
// wake-up. It returns false only when ctx ended before the job finished.
func (w *Worker) Handle(topic string) func(context.Context, []byte) bool {
	if topic == jobs.TopicTrain {
		return w.WakeTraining
	}
	if k, ok := byTopic[topic]; ok {
		return k.handle(w)
	}
	return nil
}

// Run checks the API (address and token), then pulls training attempts
// whenever it is free and consumes the other job topics concurrently (see
// releasesWhileBusy for how many at a time, and how a long job lets the
// others go) until ctx ends, then returns nil. An in-flight
// training attempt is stopped and handed back to the queue, where the next
// free worker takes it.
func Run(ctx context.Context, cfg Config) error {
	w, err := New(cfg)
	if err != nil {
		return err
	}
	defer w.Close()
	return w.Run(ctx)
}

// Run is the package-level Run for an existing Worker.
func (w *Worker) Run(ctx context.Context) error {
	if len(w.cfg.Brokers) == 0 {
		return errors.New("worker: no Kafka brokers (KAFKA_BROKERS)")
	}
	// No job before the API answers: a worker that cannot report would
	// only hold work other workers could do.
	if err := w.AwaitAPI(ctx); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return nil
	}
	// Its own client id tells this worker's group members from other
	// workers' (a long job asks whether anyone else could take the jobs
	// queued behind it: runReleasing).
	sub, err := bus.NewSubscriber(bus.Config{Brokers: w.cfg.Brokers, ConsumerGroup: w.cfg.ConsumerGroup,
		ClientID: "critic-worker-" + w.client.WorkerID, CommitInterval: -1, Logger: w.log}, watermill.NewSlogLogger(w.log))
	if err != nil {
		return err
	}
	defer sub.Close()
	// Train messages only wake an idle training loop, so every worker must
	// see every one: in the shared group a wake-up lands on whichever member
	// holds its partition — often a busy one — and the idle worker waited
	// for its next claim poll. A group of this worker's own (new ones start
	// at the topic's beginning, and any number of old wake-ups is one claim)
	// hands it all of them.
	wakeSub, err := bus.NewSubscriber(bus.Config{Brokers: w.cfg.Brokers, ConsumerGroup: w.WakeGroup(),
		ClientID: "critic-worker", CommitInterval: time.Second, Logger: w.log}, watermill.NewSlogLogger(w.log))
	if err != nil {
		return err
	}
	defer wakeSub.Close()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	type consumer struct {
		sub    *bus.Subscriber
		topic  string
		handle func(context.Context, []byte) bool
	}
	var consumers []consumer
	for _, topic := range jobs.Topics() {
		h := w.Handle(topic)
		switch {
		case h == nil:
			return fmt.Errorf("this worker has no handler for job topic %s", topic)
		case topic == jobs.TopicTrain:
			consumers = append(consumers, consumer{wakeSub, topic, h})
		case shortJob(topic):
			for range w.cfg.ShortJobs {
				consumers = append(consumers, consumer{sub, topic, h})
			}
		case byTopic[topic].consume != labelSlots:
			consumers = append(consumers, consumer{sub, topic, h})
		case w.cfg.StepLabel != nil:
			for range w.cfg.LabelJobs {
				consumers = append(consumers, consumer{sub, topic, h})
			}
			if w.cfg.Grader == nil {
				w.log.Info("no quality checks: step scores are the rules alone", "reason", w.cfg.GraderUnavailable)
			} else {
				w.log.Info("quality checks on", "grading_model", w.cfg.Grader.Model())
			}
		default:
			// A worker without a step-label model leaves label jobs to
			// workers that have one (it would only drop them).
			w.log.Info("not consuming label jobs: no step-label model", "reason", w.cfg.StepLabelUnavailable)
		}
	}
	for _, t := range consumers {
		wg.Go(func() {
			if err := w.consume(ctx, t.sub, t.topic, t.handle); err != nil {
				cancel(err)
			}
		})
	}
	wg.Go(func() {
		w.trainLoop(ctx)
	})
	topics := make([]string, len(consumers))
	for i, c := range consumers {
		topics[i] = c.topic
	}
	topics = slices.Compact(topics) // a topic's slots stand together: name it once
	gogc := model.SetEngineGC()     // this process scores and trains: see model.EngineGCPercent
	w.log.Info("worker consuming", "topics", topics, "short_job_slots", w.cfg.ShortJobs, "group", w.cfg.ConsumerGroup, "wake_group", w.WakeGroup(),
		"brokers", strings.Join(w.cfg.Brokers, ","), "cpu_kernels", model.CPUKernels(), "matmul", model.MatmulKernel(), "ops", model.ExecutorsStatus(), "gogc", gogc)
	if advice := model.CPUKernelsAdvice(); advice != "" {
		w.log.Warn(advice)
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// consume hands each message of topic to handle and acknowledges it (committing
// its offset) once handle reports the job finished. handle returns false only
// when ctx ended mid-job: the message is then left unacknowledged. While the
// API cannot be reached it holds no subscription: it leaves the topic's
// group between jobs (its partitions go to the other workers) and joins
// again once the API answers.
func (w *Worker) consume(ctx context.Context, sub *bus.Subscriber, topic string, handle func(context.Context, []byte) bool) error {
	for attempt := 1; ; attempt++ {
		if !w.api.waitUp(ctx) {
			return nil
		}
		sctx, leave := context.WithCancel(ctx)
		msgs, err := sub.Subscribe(sctx, topic)
		if err != nil {
			leave()
			if ctx.Err() != nil {
				return nil
			}
			w.log.Error("subscribing; retrying", "topic", topic, "error", err)
			if !sleep(ctx, backoff(attempt, 30*time.Second)) {
				return nil
			}
			continue
		}
		for {
			down, changed := w.api.state()
			if down {
				break
			}
			var msg *message.Message
			var ok bool
			select {
			case <-ctx.Done():
				leave()
				return nil
			case <-changed:
				continue
			case msg, ok = <-msgs:
			}
			if !ok {
				leave()
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("worker: subscription to %s ended", topic)
			}
			if down, _ := w.api.state(); down {
				msg.Nack() // not started: the next owner of the partition gets it
				break
			}
			// The job keeps the correlation id of the request that caused it.
			jctx := requestid.With(ctx, msg.Metadata.Get(requestid.MetadataKey))
			if !releasesWhileBusy(topic) {
				if !handle(jctx, msg.Payload) {
					leave()
					return nil
				}
				msg.Ack()
				continue
			}
			finished, released := w.runReleasing(jctx, topic, msg.Payload, handle, func() bool {
				return sub.Waiting(topic) == 0 || w.alone(ctx, sub, topic)
			}, func() {
				leave()
				for range msgs {
				}
			})
			if !finished {
				leave()
				return nil
			}
			if released {
				break // rejoin the group
			}
			msg.Ack()
		}
		leave() // the API is down or a long job released the partitions
		for range msgs {
		}
		attempt = 0
	}
}

// runReleasing runs a long job; once it has run ReleaseBusyAfter, and again
// every ReleaseBusyAfter while it runs, it asks whether to keep the topic's
// partitions (keep: no job waits behind this one on them, or no other
// worker consumes the topic), and once the answer is no it calls release
// (the consumer leaves the topic's group, so the jobs queued behind this
// one go to the other worker) and waits for the job. Leaving when nothing
// waits, or when no one else could take it, would move no job, and the
// rejoin after the job costs every topic of the group a rebalance and the
// next job its wait (0.3–1.1 s per scoring batch on the embedded broker;
// on Kafka an emptied group also waits out the initial rebalance delay)
// — with two workers each scoring a batch, every batch did. finished is handle's answer;
// released says the partitions were given up, so the message cannot be
// acknowledged: whoever owns its partition next gets it again, and its
// claim refuses it (the run is no longer queued) and commits it.
func (w *Worker) runReleasing(ctx context.Context, topic string, payload []byte, handle func(context.Context, []byte) bool, keep func() bool, release func()) (finished, released bool) {
	done := make(chan bool, 1)
	go func() { done <- handle(ctx, payload) }()
	t := time.NewTicker(w.cfg.ReleaseBusyAfter)
	defer t.Stop()
	for {
		select {
		case finished = <-done:
			return finished, false
		case <-t.C:
		}
		if !keep() {
			break
		}
	}
	w.log.Info("long job running: leaving the topic's consumer group until it ends, so free workers take the jobs behind it", "topic", topic)
	release()
	return <-done, true
}

// alone reports whether no other worker consumes topic (bus.Subscriber.Peers);
// when the group cannot be described it answers false, so a long job gives
// its partitions up as it would without the question.
func (w *Worker) alone(ctx context.Context, sub *bus.Subscriber, topic string) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	n, err := sub.Peers(ctx, topic)
	if err != nil {
		w.log.Debug("could not tell whether another worker consumes the topic; giving its partitions up", "topic", topic, "error", err)
		return false
	}
	return n == 0
}

// WakeGroup is the consumer group of this worker alone that reads
// critic.jobs.train (see Run): "<group>.wake.<worker id>".
func (w *Worker) WakeGroup() string { return w.cfg.ConsumerGroup + ".wake." + w.client.WorkerID }
