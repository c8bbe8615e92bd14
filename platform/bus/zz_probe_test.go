package bus

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"
)

func TestProbeThroughput(t *testing.T) {
	b := startBroker(t, EmbeddedConfig{DataDir: t.TempDir()})
	cfg := testConfig(b.Addrs(), uniqueName("g"), 1)
	pub := newPublisher(t, cfg)
	topic := uniqueName("t")
	var msgs []*message.Message
	for i := 0; i < 5000; i++ {
		msgs = append(msgs, message.NewMessage(watermill.NewUUID(), []byte("x")))
	}
	require.NoError(t, pub.Publish(topic, msgs...))
	for _, n := range []int{1, 5, 20} {
		start := time.Now()
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			cfg := cfg
			cfg.ConsumerGroup = uniqueName("g")
			sub := newSubscriber(t, cfg)
			ch, err := sub.Subscribe(context.Background(), topic)
			require.NoError(t, err)
			wg.Add(1)
			go func() { defer wg.Done(); readN(t, ch, 5000, 5*time.Minute) }()
		}
		wg.Wait()
		t.Logf("%d groups x 5000: %s", n, time.Since(start))
	}
}
