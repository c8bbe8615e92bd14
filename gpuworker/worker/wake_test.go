package worker

import (
	"context"
	"github.com/criticml/critic/domain/jobs"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/platform/bus"
)

// Every idle worker wakes on a train message, not only the one holding its
// partition: on a one-partition topic (so in a shared group one worker
// would hold every wake-up) and with claim polls too rare to matter, two
// models queued at once are trained by the two workers, one each.
func TestEveryIdleWorkerWakesOnATrainMessage(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a broker and two workers")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s := newSetup(t)
	broker, err := bus.StartEmbedded(ctx, bus.EmbeddedConfig{})
	require.NoError(t, err)
	defer broker.Close()
	pub, err := bus.NewPublisher(bus.Config{Brokers: broker.Addrs(), TopicPartitions: 1}, nil)
	require.NoError(t, err)
	defer pub.Close()
	// Creates the topic with its one partition before any worker asks.
	publish(t, pub, jobs.TopicTrain, "none", jobs.TrainJob{ModelID: "none", Attempt: 1, OwnerID: s.api.owner.UserID})

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 2)
	for _, id := range []string{"w-1", "w-2"} {
		cfg := s.config(t, id)
		cfg.Brokers, cfg.HeartbeatMinInterval, cfg.ClaimPollInterval = broker.Addrs(), time.Millisecond, time.Hour
		cfg.DataDir = t.TempDir()
		go func() { done <- Run(runCtx, cfg) }()
	}
	// Both loops asked once at start (nothing queued) and now wait for a
	// wake-up; the first message reached both (a claim each after it).
	s.api.waitFor("/jobs/train/claim", 4, time.Minute)

	a, _ := s.api.queueTraining(t, s.base)
	b, _ := s.api.queueTraining(t, s.base)
	publish(t, pub, jobs.TopicTrain, a, s.api.trainMessage(a))
	publish(t, pub, jobs.TopicTrain, b, s.api.trainMessage(b))
	s.api.waitFor("/finish", 2, 2*time.Minute) // trainings only: no other kind runs here
	by := map[string]string{a: s.api.status(t, a).WorkerID, b: s.api.status(t, b).WorkerID}
	require.ElementsMatch(t, []string{"w-1", "w-2"}, []string{by[a], by[b]}, "each worker trained one model: %v", by)

	stop()
	for range 2 {
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Fatal("Run did not return after cancel")
		}
	}
}
