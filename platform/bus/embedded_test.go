package bus

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestEmbeddedSurvivesRestart checks what the single-machine deployment
// relies on: after the broker restarts on the same data dir and port, the
// messages are still there and a consumer group resumes from the offset it
// committed before the restart.
func TestEmbeddedSurvivesRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b1, err := StartEmbedded(context.Background(), EmbeddedConfig{DataDir: dir})
	require.NoError(t, err)
	port := portOf(t, b1.Addrs()[0])

	topic, group := uniqueName("restart"), uniqueName("projection")
	cfg := testConfig(b1.Addrs(), group, 3)
	msgs := keyedMessages(10, 3)

	pub, err := NewPublisher(cfg, testLogger())
	require.NoError(t, err)
	require.NoError(t, pub.Publish(topic, msgs[:7]...))
	require.NoError(t, pub.Close())

	// Consume and acknowledge 4 messages, then stop cleanly: their offsets
	// are committed, the other 3 are not.
	sub, err := NewSubscriber(cfg, testLogger())
	require.NoError(t, err)
	ch, err := sub.Subscribe(context.Background(), topic)
	require.NoError(t, err)
	first := readN(t, ch, 4, 30*time.Second)
	require.NoError(t, sub.Close())
	require.NoError(t, b1.Close())

	b2, err := StartEmbedded(context.Background(), EmbeddedConfig{DataDir: dir, Port: port})
	require.NoError(t, err)
	t.Cleanup(func() { _ = b2.Close() })
	require.Equal(t, b1.Addrs(), b2.Addrs())

	pub2 := newPublisher(t, cfg)
	require.NoError(t, pub2.Publish(topic, msgs[7:]...))

	// The same group resumes: it gets exactly the messages it had not
	// acknowledged, each key still in order.
	sub2 := newSubscriber(t, cfg)
	ch2, err := sub2.Subscribe(context.Background(), topic)
	require.NoError(t, err)
	rest := readN(t, ch2, 6, 30*time.Second)
	require.ElementsMatch(t, uuids(msgs), append(uuids(first), uuids(rest)...))
	requireOrderPerKey(t, append(first, rest...))
	select {
	case m := <-ch2:
		require.Failf(t, "redelivered after a clean close", "message %s %q", m.UUID, m.Payload)
	case <-time.After(500 * time.Millisecond):
	}

	// A new group still sees the whole log: the messages themselves persisted.
	cfgNew := cfg
	cfgNew.ConsumerGroup = uniqueName("fresh")
	sub3 := newSubscriber(t, cfgNew)
	ch3, err := sub3.Subscribe(context.Background(), topic)
	require.NoError(t, err)
	all := readN(t, ch3, 10, 30*time.Second)
	require.ElementsMatch(t, uuids(msgs), uuids(all))
}

func TestStartEmbeddedRejectsBadPort(t *testing.T) {
	t.Parallel()
	_, err := StartEmbedded(context.Background(), EmbeddedConfig{Port: 70000})
	require.ErrorContains(t, err, "port 70000")
}

func portOf(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	port, err := strconv.Atoi(p)
	require.NoError(t, err)
	return port
}

// TestEmbeddedRefusesSharedDataDir: a second broker on a data dir in use
// fails instead of corrupting the first one's log.
func TestEmbeddedRefusesSharedDataDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b1 := startBroker(t, EmbeddedConfig{DataDir: dir})
	_, err := StartEmbedded(context.Background(), EmbeddedConfig{DataDir: dir})
	require.ErrorContains(t, err, "in use")
	require.NoError(t, b1.Close())
	b2 := startBroker(t, EmbeddedConfig{DataDir: dir})
	require.NotEmpty(t, b2.Addrs())
}
