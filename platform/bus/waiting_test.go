package bus

import (
	"context"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"
)

// Waiting counts the messages a member has fetched behind the one in hand:
// none while a lone message runs, the ones published behind it as they
// arrive, fewer as each is handed out, and none once the subscription ends.
func TestWaitingCountsTheMessagesBehindTheOneInHand(t *testing.T) {
	b := startBroker(t, EmbeddedConfig{})
	topic := uniqueName("waiting")
	cfg := testConfig(b.Addrs(), uniqueName("group"), 1)
	pub := newPublisher(t, cfg)
	sub := newSubscriber(t, cfg)
	require.Zero(t, sub.Waiting(topic), "no member yet")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	msgs, err := sub.Subscribe(ctx, topic)
	require.NoError(t, err)
	require.NoError(t, pub.Publish(topic, message.NewMessage("first", []byte("1"))))
	first := receive(t, msgs)
	// The one in hand is not waiting, and nothing else was published.
	time.Sleep(300 * time.Millisecond)
	require.Zero(t, sub.Waiting(topic))

	require.NoError(t, pub.Publish(topic, message.NewMessage("second", []byte("2")), message.NewMessage("third", []byte("3"))))
	require.Eventually(t, func() bool { return sub.Waiting(topic) == 2 }, 10*time.Second, 10*time.Millisecond,
		"the two messages published behind the one in hand")
	require.Zero(t, sub.Waiting(uniqueName("other")), "another topic's count is its own")

	first.Ack()
	second := receive(t, msgs)
	require.Equal(t, "second", second.UUID)
	require.Equal(t, 1, sub.Waiting(topic))
	second.Ack()

	cancel()
	for range msgs {
	}
	require.Eventually(t, func() bool { return sub.Waiting(topic) == 0 }, 10*time.Second, 10*time.Millisecond,
		"a closed member counts nothing")
}

// receive takes the next message of ch without acknowledging it.
func receive(t *testing.T, ch <-chan *message.Message) *message.Message {
	t.Helper()
	select {
	case m, ok := <-ch:
		require.True(t, ok, "the subscription ended")
		return m
	case <-time.After(30 * time.Second):
		require.FailNow(t, "no message within 30 s")
	}
	return nil
}
