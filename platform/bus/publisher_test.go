package bus

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestPublishBatchIsOneRoundTrip: the relay's 1000-event batch reaches the
// broker as one produce request per partition, not one per event.
func TestPublishBatchIsOneRoundTrip(t *testing.T) {
	t.Parallel()
	b := startBroker(t, EmbeddedConfig{})
	cfg := testConfig(b.Addrs(), uniqueName("g"), 4)
	topic := uniqueName("events")
	pub := newPublisher(t, cfg)
	require.NoError(t, pub.Publish(topic, keyedMessages(1, 1)...)) // creates the topic

	var (
		mu       sync.Mutex
		requests int
		perPart  = map[int32]int{}
	)
	b.cluster.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		mu.Lock()
		defer mu.Unlock()
		requests++
		for _, tp := range req.(*kmsg.ProduceRequest).Topics {
			for _, p := range tp.Partitions {
				perPart[p.Partition]++
			}
		}
		return nil, nil, false // observe only; the broker handles it
	})

	msgs := keyedMessages(1000, 40)
	require.NoError(t, pub.Publish(topic, msgs...))

	mu.Lock()
	require.LessOrEqual(t, requests, 4, "one produce request per partition at most")
	require.Len(t, perPart, 4, "40 owners spread over all 4 partitions")
	for p, n := range perPart {
		require.Equal(t, 1, n, "partition %d written more than once", p)
	}
	mu.Unlock()

	sub := newSubscriber(t, cfg)
	ch, err := sub.Subscribe(context.Background(), topic)
	require.NoError(t, err)
	got := readN(t, ch, 1001, 30*time.Second)
	require.Subset(t, uuids(got), uuids(msgs))
}

// TestOrderPerKeyAcrossPartitions: with several partitions and several
// members of one group, every owner's events still arrive in publish order,
// and each event reaches exactly one member.
func TestOrderPerKeyAcrossPartitions(t *testing.T) {
	t.Parallel()
	b := startBroker(t, EmbeddedConfig{})
	cfg := testConfig(b.Addrs(), uniqueName("readmodel"), 8)
	topic := uniqueName("events")
	pub := newPublisher(t, cfg)
	msgs := keyedMessages(2000, 25)
	for i := 0; i < len(msgs); i += 250 { // as the relay does: several batches
		require.NoError(t, pub.Publish(topic, msgs[i:i+250]...))
	}

	var (
		mu   sync.Mutex
		got  = map[int][]*message.Message{}
		seen = map[string]bool{}
	)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for member := range 2 {
		ch, err := newSubscriber(t, cfg).Subscribe(ctx, topic)
		require.NoError(t, err)
		wg.Go(func() {
			for m := range ch {
				mu.Lock()
				got[member] = append(got[member], m)
				// Delivery is at least once: a rebalance between the two
				// members may deliver an event again, so the run ends when
				// every event arrived, not after as many deliveries.
				seen[m.UUID] = true
				n := len(seen)
				mu.Unlock()
				m.Ack()
				if n >= len(msgs) {
					cancel()
				}
			}
		})
	}
	wg.Wait()

	all := append(append([]*message.Message(nil), got[0]...), got[1]...)
	require.Subset(t, uuids(all), uuids(msgs))
	require.Subset(t, uuids(msgs), uuids(all))
	requireOrderPerKey(t, got[0])
	requireOrderPerKey(t, got[1])
}

func TestPublishAfterCloseFails(t *testing.T) {
	t.Parallel()
	b := startBroker(t, EmbeddedConfig{})
	pub, err := NewPublisher(testConfig(b.Addrs(), "", 1), testLogger())
	require.NoError(t, err)
	require.NoError(t, pub.Close())
	err = pub.Publish(uniqueName("t"), message.NewMessage(watermill.NewUUID(), nil))
	require.ErrorIs(t, err, ErrClosed)
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	_, err := NewPublisher(Config{}, nil)
	require.ErrorContains(t, err, "no brokers")
	_, err = NewSubscriber(Config{Brokers: []string{"127.0.0.1:9092"}}, nil)
	require.ErrorContains(t, err, "ConsumerGroup")
	err = Config{Brokers: []string{"x:1"}, PublishTimeout: -time.Second}.Validate()
	require.ErrorContains(t, err, "PublishTimeout")
}
