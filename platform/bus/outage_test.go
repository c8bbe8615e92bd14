package bus

import (
	"context"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"
)

// TestPublishFailsWhileBrokerDown checks the behaviour the relay depends
// on: while the broker is down, Publish returns an error instead of hanging,
// and once the broker is back on the same address the same Publisher works
// again; a consumer then sees everything that was published successfully.
func TestPublishFailsWhileBrokerDown(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b1, err := StartEmbedded(context.Background(), EmbeddedConfig{DataDir: dir})
	require.NoError(t, err)
	addrs := b1.Addrs()

	cfg := testConfig(addrs, uniqueName("relay-check"), 4)
	cfg.PublishTimeout = 3 * time.Second
	topic := uniqueName("outage")
	pub := newPublisher(t, cfg)
	msgs := keyedMessages(30, 5)

	require.NoError(t, pub.Publish(topic, msgs[:10]...))
	published := append([]*message.Message(nil), msgs[:10]...)

	require.NoError(t, b1.Close())

	// Publish must give up on its own; the bound here only detects a hang
	// (PublishTimeout is 3 s), it is not a performance assertion.
	errc := make(chan error, 1)
	go func() { errc <- pub.Publish(topic, msgs[10:20]...) }()
	select {
	case err := <-errc:
		require.Error(t, err)
	case <-time.After(30 * time.Second):
		require.FailNow(t, "Publish hung while the broker was down")
	}

	b2, err := StartEmbedded(context.Background(), EmbeddedConfig{DataDir: dir, Port: portOf(t, addrs[0])})
	require.NoError(t, err)
	t.Cleanup(func() { _ = b2.Close() })

	// The first publish after the restart succeeds: the Publisher redials.
	require.NoError(t, pub.Publish(topic, msgs[20:]...))
	published = append(published, msgs[20:]...)

	sub := newSubscriber(t, cfg)
	ch, err := sub.Subscribe(context.Background(), topic)
	require.NoError(t, err)
	got := readN(t, ch, len(published), 30*time.Second)
	require.ElementsMatch(t, uuids(published), uuids(got))
	requireOrderPerKey(t, got)
}

// TestSubscriberResumesAfterBrokerRestart checks that a running consumer
// rides out a broker restart: it keeps its channel open and receives what is
// published after the broker came back.
func TestSubscriberResumesAfterBrokerRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b1, err := StartEmbedded(context.Background(), EmbeddedConfig{DataDir: dir})
	require.NoError(t, err)
	addrs := b1.Addrs()
	cfg := testConfig(addrs, uniqueName("projection"), 2)
	topic := uniqueName("resume")
	pub := newPublisher(t, cfg)
	msgs := keyedMessages(20, 4)
	require.NoError(t, pub.Publish(topic, msgs[:10]...))

	sub := newSubscriber(t, cfg)
	ch, err := sub.Subscribe(context.Background(), topic)
	require.NoError(t, err)
	got := readN(t, ch, 10, 30*time.Second)

	require.NoError(t, b1.Close())
	b2, err := StartEmbedded(context.Background(), EmbeddedConfig{DataDir: dir, Port: portOf(t, addrs[0])})
	require.NoError(t, err)
	t.Cleanup(func() { _ = b2.Close() })

	require.NoError(t, pub.Publish(topic, msgs[10:]...))
	// At least once: after the restart the group may replay messages whose
	// commit had not reached the broker yet, so read until all are seen.
	seen := map[string]bool{}
	for _, m := range got {
		seen[m.UUID] = true
	}
	deadline := time.After(60 * time.Second)
	for len(seen) < len(msgs) {
		select {
		case m, ok := <-ch:
			require.True(t, ok, "channel closed during broker restart")
			seen[m.UUID] = true
			got = append(got, m)
			m.Ack()
		case <-deadline:
			require.FailNow(t, "timed out", "saw %d of %d messages", len(seen), len(msgs))
		}
	}
	require.ElementsMatch(t, uuids(msgs), keys(seen))
	requireOrderPerKey(t, got)
}

func keys(m map[string]bool) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}
