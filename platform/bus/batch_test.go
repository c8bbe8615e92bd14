package bus

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"
)

// batchRecorder is a BatchHandler that records what it was given and stops
// the consumer once want distinct messages were handled successfully.
type batchRecorder struct {
	mu      sync.Mutex
	batches [][]*message.Message // successfully handled, in order
	seen    map[string]bool
	want    int
	done    context.CancelFunc
	fail    func(call int, batch []*message.Message) error // nil: never fail
	calls   int
	failed  [][]*message.Message
}

func (r *batchRecorder) handle(_ context.Context, batch []*message.Message) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	if r.fail != nil {
		if err := r.fail(r.calls, batch); err != nil {
			r.failed = append(r.failed, batch)
			return err
		}
	}
	r.batches = append(r.batches, batch)
	for _, m := range batch {
		r.seen[m.UUID] = true
	}
	if len(r.seen) >= r.want {
		r.done()
	}
	return nil
}

func (r *batchRecorder) all() []*message.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	var all []*message.Message
	for _, b := range r.batches {
		all = append(all, b...)
	}
	return all
}

// consumeBatches runs ConsumeBatches until rec has seen rec.want messages.
func consumeBatches(t *testing.T, sub *Subscriber, topic string, maxBatch int, rec *batchRecorder) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ctx, rec.done = context.WithCancel(ctx)
	err := sub.ConsumeBatches(ctx, topic, maxBatch, 200*time.Millisecond, rec.handle)
	require.ErrorIs(t, err, context.Canceled, "ConsumeBatches ended before all messages arrived")
}

// TestConsumeBatchesGroupsMessagesInKeyOrder: a relay-sized backlog arrives
// in full batches, complete, and each owner's events in order.
func TestConsumeBatchesGroupsMessagesInKeyOrder(t *testing.T) {
	t.Parallel()
	b := startBroker(t, EmbeddedConfig{})
	cfg := testConfig(b.Addrs(), uniqueName("readmodel"), 4)
	topic := uniqueName("events")
	msgs := keyedMessages(1000, 10)
	require.NoError(t, newPublisher(t, cfg).Publish(topic, msgs...))

	rec := &batchRecorder{seen: map[string]bool{}, want: len(msgs)}
	consumeBatches(t, newSubscriber(t, cfg), topic, 100, rec)

	got := rec.all()
	require.ElementsMatch(t, uuids(msgs), uuids(got))
	requireOrderPerKey(t, got)
	largest := 0
	for _, batch := range rec.batches {
		require.LessOrEqual(t, len(batch), 100)
		largest = max(largest, len(batch))
	}
	require.Equal(t, 100, largest, "a ready backlog should fill batches")
	require.Less(t, len(rec.batches), len(msgs)/10, "messages should arrive batched, got %d batches", len(rec.batches))
}

// TestConsumeBatchesRetriesFailedBatch: a failing handler gets the same
// batch again, and nothing after it, until it succeeds; nothing is lost.
func TestConsumeBatchesRetriesFailedBatch(t *testing.T) {
	t.Parallel()
	b := startBroker(t, EmbeddedConfig{})
	cfg := testConfig(b.Addrs(), uniqueName("readmodel"), 2)
	topic := uniqueName("events")
	msgs := keyedMessages(60, 6)
	require.NoError(t, newPublisher(t, cfg).Publish(topic, msgs...))

	rec := &batchRecorder{seen: map[string]bool{}, want: len(msgs), fail: func(call int, _ []*message.Message) error {
		if call <= 2 {
			return errors.New("database unavailable")
		}
		return nil
	}}
	consumeBatches(t, newSubscriber(t, cfg), topic, 25, rec)

	require.Len(t, rec.failed, 2)
	require.Equal(t, uuids(rec.failed[0]), uuids(rec.failed[1]), "the retry must carry the same batch")
	require.Equal(t, uuids(rec.failed[0]), uuids(rec.batches[0]), "the first success is the failed batch")
	got := rec.all()
	require.ElementsMatch(t, uuids(msgs), uuids(got))
	requireOrderPerKey(t, got)
}

// TestConsumeBatchesRedeliversUncommittedBatch: a consumer that dies while
// handling a batch never committed it, so the next consumer of the group
// starts with that batch; what was committed is not delivered again.
func TestConsumeBatchesRedeliversUncommittedBatch(t *testing.T) {
	t.Parallel()
	b := startBroker(t, EmbeddedConfig{DataDir: t.TempDir()})
	cfg := testConfig(b.Addrs(), uniqueName("readmodel"), 1)
	topic := uniqueName("events")
	msgs := keyedMessages(50, 5)
	require.NoError(t, newPublisher(t, cfg).Publish(topic, msgs...))

	// First consumer: handles one batch, then "crashes" inside the second
	// (its context ends and the handler returns an error).
	ctx, crash := context.WithCancel(context.Background())
	defer crash()
	var committed, lost []*message.Message
	sub1 := newSubscriber(t, cfg)
	err := sub1.ConsumeBatches(ctx, topic, 20, 200*time.Millisecond, func(_ context.Context, batch []*message.Message) error {
		if committed == nil {
			committed = batch
			return nil
		}
		lost = batch
		crash()
		return errors.New("killed")
	})
	require.ErrorIs(t, err, context.Canceled)
	require.NoError(t, sub1.Close())
	require.NotEmpty(t, committed)
	require.NotEmpty(t, lost)

	rec := &batchRecorder{seen: map[string]bool{}, want: len(msgs) - len(committed)}
	consumeBatches(t, newSubscriber(t, cfg), topic, 20, rec)
	got := rec.all()
	require.Equal(t, uuids(lost), uuids(got[:len(lost)]), "the uncommitted batch comes first")
	require.ElementsMatch(t, uuids(msgs), append(uuids(committed), uuids(got)...))
	requireOrderPerKey(t, append(committed, got...))
}

func TestConsumeBatchesStopsOnClose(t *testing.T) {
	t.Parallel()
	b := startBroker(t, EmbeddedConfig{})
	cfg := testConfig(b.Addrs(), uniqueName("readmodel"), 1)
	sub := newSubscriber(t, cfg)
	errc := make(chan error, 1)
	go func() {
		errc <- sub.ConsumeBatches(context.Background(), uniqueName("events"), 10, 10*time.Millisecond,
			func(context.Context, []*message.Message) error { return nil })
	}()
	time.Sleep(500 * time.Millisecond) // let it join the group; not a correctness assumption
	require.NoError(t, sub.Close())
	select {
	case err := <-errc:
		require.ErrorIs(t, err, ErrClosed)
	case <-time.After(30 * time.Second):
		require.FailNow(t, "ConsumeBatches did not return after Close")
	}
	_, err := sub.Subscribe(context.Background(), "x")
	require.ErrorIs(t, err, ErrClosed)
}

// TestConsumeBatchesHurryEndsTheGather: with Config.Hurry's channel closed
// a batch is handled without waiting out its gather window (an hour here:
// the test's minute would run out first if it were not cut short).
func TestConsumeBatchesHurryEndsTheGather(t *testing.T) {
	t.Parallel()
	b := startBroker(t, EmbeddedConfig{})
	cfg := testConfig(b.Addrs(), uniqueName("snapshot"), 1)
	hurried := make(chan struct{})
	close(hurried)
	cfg.Hurry = func() <-chan struct{} { return hurried }
	topic := uniqueName("events")
	msgs := keyedMessages(1, 1)
	require.NoError(t, newPublisher(t, cfg).Publish(topic, msgs...))

	rec := &batchRecorder{seen: map[string]bool{}, want: len(msgs)}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ctx, rec.done = context.WithCancel(ctx)
	err := newSubscriber(t, cfg).ConsumeBatches(ctx, topic, 100, time.Hour, rec.handle)
	require.ErrorIs(t, err, context.Canceled, "the batch waited out its gather window")
	require.Equal(t, uuids(msgs), uuids(rec.all()))
}
