package bus

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/segmentio/kafka-go"
)

// headerUUID carries the watermill message UUID (our event id) so that
// consumers can deduplicate; the name matches watermill-kafka's so that
// messages written by either adapter read the same.
const headerUUID = "_watermill_message_uuid"

// ErrClosed is returned by Publish and Subscribe after Close, so callers can
// tell shutdown from a broker failure.
var ErrClosed = errors.New("bus: closed")

// Publisher writes watermill messages to Kafka topics. It is the relay's
// only way onto the bus, so it favours throughput (one WriteMessages call per
// Publish) and a bounded failure (PublishTimeout) over hiding outages.
type Publisher struct {
	cfg       Config
	transport *kafka.Transport
	writer    *kafka.Writer
	topics    *topicCreator

	mu     sync.RWMutex // held for reading by Publish, for writing by Close
	closed bool
}

var _ message.Publisher = (*Publisher)(nil)

// NewPublisher connects lazily: it validates cfg and returns a Publisher that
// dials the brokers on the first Publish, so a process can start before the
// broker does.
func NewPublisher(cfg Config, logger watermill.LoggerAdapter) (*Publisher, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	transport := newTransport(cfg)
	klog := newBusLog(cfg, logger)
	return &Publisher{
		cfg:       cfg,
		transport: transport,
		topics:    newTopicCreator(cfg, transport),
		writer: &kafka.Writer{
			Addr:      kafka.TCP(cfg.Brokers...),
			Transport: transport,
			// Murmur2 (Java's partitioner, also franz-go's default for keyed
			// records) rather than kafka-go's FNV Hash: any other producer
			// writing owner-keyed events to the same topic, in any language,
			// then picks the same partition, so one owner's events stay in
			// one ordered partition. Unkeyed messages go to a random partition.
			Balancer:     &kafka.Murmur2Balancer{},
			RequiredAcks: kafka.RequireAll,
			MaxAttempts:  cfg.WriteMaxAttempts,
			BatchSize:    cfg.BatchSize,
			BatchBytes:   cfg.BatchBytes,
			BatchTimeout: cfg.BatchTimeout,
			WriteTimeout: cfg.PublishTimeout,
			ReadTimeout:  cfg.PublishTimeout,
			Logger:       kafkaLogger{l: klog},
			ErrorLogger:  kafkaLogger{l: klog, error: true},
		},
	}, nil
}

// Publish implements message.Publisher. All msgs go to Kafka in one
// WriteMessages call (one produce request per partition and BatchSize), and
// Publish returns only after the brokers acknowledged all of them (acks=all)
// or an error: then some may have been written, and the caller retries the
// whole batch, which consumers tolerate by deduplicating.
func (p *Publisher) Publish(topic string, msgs ...*message.Message) error {
	return p.PublishContext(context.Background(), topic, msgs...)
}

// PublishContext is Publish bounded by ctx as well as PublishTimeout, for
// callers such as the relay that stop on shutdown.
func (p *Publisher) PublishContext(ctx context.Context, topic string, msgs ...*message.Message) error {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return ErrClosed
	}
	if len(msgs) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, p.cfg.PublishTimeout)
	defer cancel()
	if err := p.topics.ensure(ctx, topic); err != nil {
		return err
	}
	kmsgs := make([]kafka.Message, len(msgs))
	for i, m := range msgs {
		kmsgs[i] = toKafka(topic, m)
	}
	if err := p.writer.WriteMessages(ctx, kmsgs...); err != nil {
		return fmt.Errorf("bus: publish %d message(s) to %q: %w", len(msgs), topic, err)
	}
	return nil
}

// Close waits for in-flight Publish calls, flushes the writer and releases
// connections. Later Publish calls return ErrClosed.
func (p *Publisher) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	err := p.writer.Close()
	p.transport.CloseIdleConnections()
	return err
}

// toKafka maps a watermill message onto a Kafka record: payload as value,
// metadata as headers, MetadataPartitionKey as key.
func toKafka(topic string, m *message.Message) kafka.Message {
	headers := make([]kafka.Header, 0, len(m.Metadata)+1)
	headers = append(headers, kafka.Header{Key: headerUUID, Value: []byte(m.UUID)})
	for k, v := range m.Metadata {
		headers = append(headers, kafka.Header{Key: k, Value: []byte(v)})
	}
	km := kafka.Message{Topic: topic, Value: m.Payload, Headers: headers}
	if key := m.Metadata.Get(MetadataPartitionKey); key != "" {
		km.Key = []byte(key)
	}
	return km
}

// fromKafka is toKafka's inverse; ctx becomes the message's context.
func fromKafka(ctx context.Context, km kafka.Message) *message.Message {
	var id string
	md := make(message.Metadata, len(km.Headers))
	for _, h := range km.Headers {
		if h.Key == headerUUID {
			id = string(h.Value)
			continue
		}
		md.Set(h.Key, string(h.Value))
	}
	m := message.NewMessage(id, km.Value)
	m.Metadata = md
	m.SetContext(ctx)
	return m
}
