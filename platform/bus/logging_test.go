package bus

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/criticml/critic/platform/logtest"
	"github.com/stretchr/testify/require"
)

// TestBrokerErrorsLoggedAtTheirLevel: the consumer-group protocol's routine
// answers (and a stopping reader's own canceled dials) are DEBUG, a burst of transient network errors is one WARN (then
// DEBUG until the interval passes, and the next WARN says how many were
// held back), and anything else stays ERROR.
func TestBrokerErrorsLoggedAtTheirLevel(t *testing.T) {
	t.Parallel()
	var out logtest.Buffer
	l := newBusLog(Config{Logger: slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}))}, nil, "consumer_group", "g")
	k := kafkaLogger{l: l, error: true}
	k.Printf("Failed to join group %s: %v", "g", errors.New("[27] Rebalance In Progress: the coordinator has begun rebalancing the group"))
	for range 100 {
		k.Printf("%v", errors.New("read tcp 127.0.0.1:1->127.0.0.1:2: i/o timeout"))
	}
	k.Printf("%v", errors.New("error initializing the kafka reader for partition 2 of critic.events: failed to dial: failed to open connection to 127.0.0.1:1: dial tcp 127.0.0.1:1: operation was canceled"))
	k.Printf("%v", errors.New("[3] Unknown Topic Or Partition"))

	require.Len(t, out.Lines("level=ERROR"), 1, out.String())
	require.Contains(t, out.Lines("level=ERROR")[0], "Unknown Topic Or Partition")
	require.Len(t, out.Lines("level=WARN"), 1, "one WARN for the burst")
	require.Contains(t, out.Lines("level=WARN")[0], "i/o timeout")
	require.Len(t, out.Lines("Rebalance In Progress"), 1)
	require.Contains(t, out.Lines("Rebalance In Progress")[0], "level=DEBUG")
	require.Contains(t, out.Lines("level=WARN")[0], "consumer_group=g")
	require.Len(t, out.Lines("operation was canceled"), 1)
	require.Contains(t, out.Lines("operation was canceled")[0], "level=DEBUG", "a reader's own canceled dial is routine")

	// After the interval, the next one is a WARN again and counts the rest.
	l.mu.Lock()
	l.nextWarn = time.Now().Add(-time.Second)
	l.mu.Unlock()
	k.Printf("%v", errors.New("write tcp: i/o timeout"))
	require.Len(t, out.Lines("level=WARN"), 2)
	require.Contains(t, out.Lines("level=WARN")[1], "similar_since_last=99")
}

// TestGroupMembersLogPartitionMoves: two members of one group each log,
// once per change, which partitions they hold and which moved; none logs an
// ERROR for the rebalance the second one's start causes; and when the second
// stops, the first logs taking its partitions over.
func TestGroupMembersLogPartitionMoves(t *testing.T) {
	t.Parallel()
	b := startBroker(t, EmbeddedConfig{})
	group, topic := uniqueName("g"), uniqueName("t")
	var outA, outB logtest.Buffer
	cfg := func(out *logtest.Buffer) Config {
		c := testConfig(b.Addrs(), group, 4)
		c.RebalanceTimeout = 2 * time.Second
		c.Logger = slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelInfo}))
		return c
	}
	ctx := t.Context()
	consume := func(s *Subscriber, ctx context.Context) {
		_ = s.ConsumeBatches(ctx, topic, 10, time.Millisecond, func(context.Context, []*message.Message) error { return nil })
	}
	a := newSubscriber(t, cfg(&outA))
	go consume(a, ctx)
	require.Eventually(t, func() bool { return len(outA.Lines("partitions moved")) >= 1 }, 60*time.Second, 50*time.Millisecond)
	require.Contains(t, outA.Lines("partitions moved")[0], "holds=\"[0 1 2 3]\"")

	bctx, bcancel := context.WithCancel(ctx)
	bsub := newSubscriber(t, cfg(&outB))
	bdone := make(chan struct{})
	go func() { defer close(bdone); consume(bsub, bctx) }()
	require.Eventually(t, func() bool {
		return len(outB.Lines("partitions moved")) >= 1 && len(outA.Lines("partitions moved")) >= 2
	}, 60*time.Second, 50*time.Millisecond)
	movedA := outA.Lines("partitions moved")[1]
	require.Contains(t, movedA, "level=INFO")
	require.Regexp(t, `revoked="\[\d`, movedA, "A names what it gave up")
	require.Regexp(t, `assigned="\[\d`, outB.Lines("partitions moved")[0], "B names what it took")

	bcancel()
	<-bdone
	require.Contains(t, outB.String(), `revoked="[`, "B logs giving its partitions back")
	require.Eventually(t, func() bool {
		l := outA.Lines("partitions moved")
		return strings.Contains(l[len(l)-1], "holds=\"[0 1 2 3]\"")
	}, 60*time.Second, 50*time.Millisecond)
	require.Empty(t, outA.Lines("level=ERROR"), outA.String())
	require.Empty(t, outB.Lines("level=ERROR"), outB.String())
}

// TestBrokerErrorsLevelsThroughWatermill: a subscriber given only a
// watermill logger (as `critic worker` is) gets the same treatment, with
// watermill's INFO standing in for WARN: its start-up's rebalance answers
// are no ERROR lines.
func TestBrokerErrorsLevelsThroughWatermill(t *testing.T) {
	t.Parallel()
	var out logtest.Buffer
	wm := watermill.NewSlogLogger(slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug})))
	k := kafkaLogger{l: newBusLog(Config{}, wm, "consumer_group", "workers"), error: true}
	k.Printf("Failed to join group %s: %v", "workers", errors.New("[27] Rebalance In Progress: the coordinator has begun rebalancing the group"))
	for range 50 {
		k.Printf("%v", errors.New("read tcp 127.0.0.1:1->127.0.0.1:2: i/o timeout"))
	}
	require.Empty(t, out.Lines("level=ERROR"), out.String())
	require.Contains(t, out.Lines("Rebalance In Progress")[0], "level=DEBUG")
	require.Len(t, out.Lines("level=INFO"), 1)
	require.Contains(t, out.Lines("level=INFO")[0], "consumer_group=workers")
}
