package bus

import (
	"context"
	"net"
	"os"
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

// A broker started with Listen binds that address (every interface for
// 0.0.0.0) and advertises an address other machines can reach: the host
// name for a wildcard, or the given one. Clients that bootstrap on the
// advertised address publish and consume through it.
func TestEmbeddedListensWhereAsked(t *testing.T) {
	t.Parallel()
	host, err := os.Hostname()
	require.NoError(t, err)
	if _, err := net.LookupHost(host); err != nil {
		t.Skipf("the host name %q does not resolve here", host)
	}
	b, err := StartEmbedded(context.Background(), EmbeddedConfig{Listen: "0.0.0.0:0"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	require.Len(t, b.Addrs(), 1)
	h, port, err := net.SplitHostPort(b.Addrs()[0])
	require.NoError(t, err)
	require.Equal(t, host, h, "a wildcard listener advertises the host name")
	require.NotEqual(t, "0", port)
	// Bound on every interface: loopback reaches it too.
	c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", port))
	require.NoError(t, err)
	require.NoError(t, c.Close())

	topic := uniqueName("listen")
	cfg := testConfig(b.Addrs(), uniqueName("g"), 1)
	pub := newPublisher(t, cfg)
	msgs := keyedMessages(3, 1)
	require.NoError(t, pub.Publish(topic, msgs...))
	sub := newSubscriber(t, cfg)
	ch, err := sub.Subscribe(context.Background(), topic)
	require.NoError(t, err)
	require.ElementsMatch(t, uuids(msgs), uuids(readN(t, ch, 3, 30*time.Second)))

	// An explicit advertised address is what clients are told.
	b2, err := StartEmbedded(context.Background(), EmbeddedConfig{Listen: "127.0.0.1:0", Advertise: "localhost:" + port})
	require.NoError(t, err)
	t.Cleanup(func() { _ = b2.Close() })
	require.Equal(t, []string{"localhost:" + port}, b2.Addrs())

	_, err = StartEmbedded(context.Background(), EmbeddedConfig{Listen: "nonsense"})
	require.ErrorContains(t, err, `broker listen address "nonsense"`)
}
