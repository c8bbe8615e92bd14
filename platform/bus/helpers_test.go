package bus

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"
)

// startBroker starts an embedded broker that the test closes on cleanup.
func startBroker(t *testing.T, cfg EmbeddedConfig) *Embedded {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := StartEmbedded(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// testConfig is a Config tuned for fast rebalances on a loaded test machine.
func testConfig(brokers []string, group string, partitions int) Config {
	return Config{
		Brokers:           brokers,
		ConsumerGroup:     group,
		ClientID:          "critic-bus-test",
		TopicPartitions:   partitions,
		NackResendDelay:   10 * time.Millisecond,
		HeartbeatInterval: 250 * time.Millisecond,
		SessionTimeout:    6 * time.Second,
		RebalanceTimeout:  6 * time.Second,
		RetryBackoffMax:   time.Second,
	}
}

func testLogger() watermill.LoggerAdapter { return watermill.NewStdLogger(false, false) }

func newPublisher(t *testing.T, cfg Config) *Publisher {
	t.Helper()
	p, err := NewPublisher(cfg, testLogger())
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func newSubscriber(t *testing.T, cfg Config) *Subscriber {
	t.Helper()
	s, err := NewSubscriber(cfg, testLogger())
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func uniqueName(prefix string) string { return prefix + "-" + watermill.NewShortUUID() }

// keyedMessages returns n messages spread over keys owners, with payload
// "<owner>/<seq within owner>" so tests can check per-key order.
func keyedMessages(n, owners int) []*message.Message {
	seq := make([]int, owners)
	msgs := make([]*message.Message, n)
	for i := range msgs {
		o := i % owners
		msgs[i] = message.NewMessage(watermill.NewUUID(), fmt.Appendf(nil, "owner-%d/%d", o, seq[o]))
		msgs[i].Metadata.Set(MetadataPartitionKey, fmt.Sprintf("owner-%d", o))
		seq[o]++
	}
	return msgs
}

// readN receives n messages from ch, acking each, or fails after timeout.
func readN(t *testing.T, ch <-chan *message.Message, n int, timeout time.Duration) []*message.Message {
	t.Helper()
	var got []*message.Message
	deadline := time.After(timeout)
	for len(got) < n {
		select {
		case m, ok := <-ch:
			require.True(t, ok, "channel closed after %d of %d messages", len(got), n)
			got = append(got, m)
			m.Ack()
		case <-deadline:
			require.FailNow(t, "timed out", "received %d of %d messages", len(got), n)
		}
	}
	return got
}

func uuids(msgs []*message.Message) []string {
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		ids[i] = m.UUID
	}
	return ids
}

// requireOrderPerKey checks that, for every partition key, the payloads
// "<owner>/<seq>" first arrive in increasing seq order (tests that skip a
// failed publish leave gaps). Redeliveries of earlier messages, as
// at-least-once permits, are ignored. Pair it with a completeness check.
func requireOrderPerKey(t *testing.T, msgs []*message.Message) {
	t.Helper()
	highest := map[string]int{} // per key
	seen := map[string]bool{}   // message UUIDs
	for _, m := range msgs {
		key := m.Metadata.Get(MetadataPartitionKey)
		require.NotEmpty(t, key, "message %s has no partition key", m.UUID)
		var owner string
		var seq int
		_, err := fmt.Sscanf(strings.Replace(string(m.Payload), "/", " ", 1), "%s %d", &owner, &seq)
		require.NoError(t, err)
		require.Equal(t, key, owner)
		if seen[m.UUID] {
			continue // a redelivery
		}
		seen[m.UUID] = true
		if last, ok := highest[key]; ok {
			require.Greater(t, seq, last, "key %s: %s arrived after seq %d", key, m.Payload, last)
		}
		highest[key] = seq
	}
}
