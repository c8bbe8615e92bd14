package relay_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/platform/bus"
	"github.com/criticml/critic/platform/eventstore"
	"github.com/criticml/critic/platform/logtest"
	"github.com/criticml/critic/platform/pg/pgtest"
	"github.com/criticml/critic/platform/relay"
)

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestRelaySurvivesBrokerOutage: events appended while the broker is down
// wait in Postgres and reach Kafka, in order per owner, once it returns.
func TestRelaySurvivesBrokerOutage(t *testing.T) {
	ctx := t.Context()
	pool := pgtest.NewPool(t)
	blobs, err := blob.NewLocal(t.TempDir())
	require.NoError(t, err)
	store := eventstore.New(pool, blobs)
	dir, port := t.TempDir(), freePort(t)
	broker, err := bus.StartEmbedded(ctx, bus.EmbeddedConfig{DataDir: dir, Port: port})
	require.NoError(t, err)
	cfg := bus.Config{Brokers: broker.Addrs(), TopicPartitions: 1, PublishTimeout: 2 * time.Second, WriteMaxAttempts: 1}
	pub, err := bus.NewPublisher(cfg, nil)
	require.NoError(t, err)
	defer pub.Close()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	go func() { _ = relay.New("kafka", store, pub, log).Run(ctx) }()

	owner := uuid.NewString()
	appendN := func(from, n int) {
		for i := from; i < from+n; i++ {
			_, err := store.Append(ctx, eventstore.Meta{Actor: "system"}, nil, []events.New{{
				ID: uuid.NewString(), Stream: "s/" + owner, OwnerID: owner, Type: "test.v1", Payload: map[string]int{"i": i}}})
			require.NoError(t, err)
		}
	}
	appendN(0, 5)
	require.Eventually(t, func() bool { lag, _ := relay.Lag(ctx, pool, "kafka"); return lag == 0 }, 20*time.Second, 50*time.Millisecond)

	require.NoError(t, broker.Close())
	appendN(5, 5)
	time.Sleep(2 * time.Second)
	lag, err := relay.Lag(ctx, pool, "kafka")
	require.NoError(t, err)
	require.Equal(t, int64(5), lag, "events wait in Postgres while the broker is down")

	broker, err = bus.StartEmbedded(ctx, bus.EmbeddedConfig{DataDir: dir, Port: port})
	require.NoError(t, err)
	defer broker.Close()
	require.Eventually(t, func() bool { lag, _ := relay.Lag(ctx, pool, "kafka"); return lag == 0 }, 60*time.Second, 100*time.Millisecond)

	sub, err := bus.NewSubscriber(bus.Config{Brokers: broker.Addrs(), ConsumerGroup: "test", TopicPartitions: 1}, nil)
	require.NoError(t, err)
	defer sub.Close()
	var mu sync.Mutex
	var seen []int
	ids := map[string]bool{}
	cctx, ccancel := context.WithCancel(ctx)
	defer ccancel()
	go func() {
		_ = sub.ConsumeBatches(cctx, relay.Topic, 100, 10*time.Millisecond, func(_ context.Context, batch []*message.Message) error {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range batch {
				var e events.Envelope
				require.NoError(t, json.Unmarshal(m.Payload, &e))
				require.Equal(t, owner, m.Metadata.Get(bus.MetadataPartitionKey))
				if ids[e.ID] {
					continue // at-least-once: duplicates are allowed, consumers dedupe
				}
				ids[e.ID] = true
				var p map[string]int
				require.NoError(t, json.Unmarshal(e.Payload, &p))
				seen = append(seen, p["i"])
			}
			return nil
		})
	}()
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(seen) == 10 }, 30*time.Second, 50*time.Millisecond)
	mu.Lock()
	require.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, seen, "one owner's events arrive in order")
	mu.Unlock()
}

// TestRelayHandsOverAndSaysSo: of two relays on one database one publishes
// and the other stands by, each saying so once in its log; when the
// publisher stops, the other takes over (and says so) and events keep
// reaching Kafka.
func TestRelayHandsOverAndSaysSo(t *testing.T) {
	ctx := t.Context()
	pool := pgtest.NewPool(t)
	blobs, err := blob.NewLocal(t.TempDir())
	require.NoError(t, err)
	store := eventstore.New(pool, blobs)
	broker, err := bus.StartEmbedded(ctx, bus.EmbeddedConfig{})
	require.NoError(t, err)
	defer broker.Close()
	pub, err := bus.NewPublisher(bus.Config{Brokers: broker.Addrs(), TopicPartitions: 1}, nil)
	require.NoError(t, err)
	defer pub.Close()
	var logA, logB logtest.Buffer
	actx, stopA := context.WithCancel(ctx)
	aDone := make(chan struct{})
	go func() {
		defer close(aDone)
		_ = relay.New("kafka", store, pub, slog.New(slog.NewTextHandler(&logA, nil)).With("instance", "a")).Run(actx)
	}()
	const leads = `msg="relay: this instance now publishes the outbox to Kafka" instance=`
	require.Eventually(t, func() bool { return strings.Contains(logA.String(), leads+"a") }, 20*time.Second, 20*time.Millisecond)
	go func() {
		_ = relay.New("kafka", store, pub, slog.New(slog.NewTextHandler(&logB, nil)).With("instance", "b")).Run(ctx)
	}()
	require.Eventually(t, func() bool { return strings.Contains(logB.String(), `msg="relay: standing by`) }, 20*time.Second, 20*time.Millisecond)

	owner := uuid.NewString()
	appendOne := func(i int) {
		_, err := store.Append(ctx, eventstore.Meta{Actor: "system"}, nil, []events.New{{
			ID: uuid.NewString(), Stream: "s/" + owner, OwnerID: owner, Type: "test.v1", Payload: map[string]int{"i": i}}})
		require.NoError(t, err)
	}
	appendOne(0)
	require.Eventually(t, func() bool { lag, _ := relay.Lag(ctx, pool, "kafka"); return lag == 0 }, 20*time.Second, 50*time.Millisecond)

	stopA()
	<-aDone
	require.Contains(t, logA.String(), `msg="relay: stopped publishing on this instance" instance=a`)
	appendOne(1)
	require.Eventually(t, func() bool { lag, _ := relay.Lag(ctx, pool, "kafka"); return lag == 0 }, 20*time.Second, 50*time.Millisecond)
	require.Contains(t, logB.String(), leads+"b")
	require.Equal(t, 1, strings.Count(logB.String(), "standing by"), "said once, not per poll")
	require.Equal(t, 1, strings.Count(logA.String(), "now publishes"))
}
