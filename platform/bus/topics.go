package bus

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
)

// topicCreator creates missing topics with our partition count, once per
// topic per process. Relying on broker-side auto-creation would give topics
// the broker's default partition count (1 on Kafka), which silently caps
// consumer parallelism forever.
type topicCreator struct {
	client            *kafka.Client
	partitions        int
	replicationFactor int

	mu    sync.Mutex
	ready map[string]bool
}

func newTopicCreator(cfg Config, transport *kafka.Transport) *topicCreator {
	return &topicCreator{
		client:            &kafka.Client{Addr: kafka.TCP(cfg.Brokers...), Transport: transport},
		partitions:        cfg.TopicPartitions,
		replicationFactor: cmp.Or(cfg.ReplicationFactor, -1), // -1: the broker's default
		ready:             map[string]bool{},
	}
}

// ensure creates topic if it does not exist and waits until the cluster's
// metadata lists it with a leader for every partition.
func (tc *topicCreator) ensure(ctx context.Context, topic string) error {
	if topic == "" {
		return errors.New("bus: empty topic name")
	}
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if tc.ready[topic] {
		return nil
	}
	resp, err := tc.client.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{
		Topic:             topic,
		NumPartitions:     tc.partitions,
		ReplicationFactor: tc.replicationFactor,
	}}})
	if err != nil {
		return fmt.Errorf("bus: create topic %q: %w", topic, err)
	}
	if err := resp.Errors[topic]; err != nil && !errors.Is(err, kafka.TopicAlreadyExists) {
		return fmt.Errorf("bus: create topic %q: %w", topic, err)
	}
	for {
		md, err := tc.client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
		if err == nil && len(md.Topics) == 1 && md.Topics[0].Error == nil && allLed(md.Topics[0].Partitions) {
			tc.ready[topic] = true
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("bus: waiting for topic %q: %w", topic, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func allLed(ps []kafka.Partition) bool {
	return len(ps) > 0 && !slices.ContainsFunc(ps, func(p kafka.Partition) bool { return p.Error != nil || p.Leader.Host == "" })
}

// newTransport builds a transport private to one Publisher or Subscriber, so
// that closing it releases its connections instead of sharing kafka-go's
// process-wide DefaultTransport.
func newTransport(cfg Config) *kafka.Transport {
	return &kafka.Transport{
		Dial:        (&net.Dialer{Timeout: 3 * time.Second}).DialContext,
		ClientID:    cfg.ClientID,
		MetadataTTL: 6 * time.Second,
	}
}

// sleepCtx waits d or until ctx ends; it reports whether the full wait
// happened.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
