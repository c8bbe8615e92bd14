package bus

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/segmentio/kafka-go"
)

// commitTimeout bounds committing an offset after the handler finished. It
// is detached from the subscription's context so that work acknowledged
// just before shutdown is still recorded instead of redelivered.
const commitTimeout = 10 * time.Second

// Subscriber consumes Kafka topics as a member of Config.ConsumerGroup.
// Each Subscribe or ConsumeBatches call is its own group member (a kafka-go
// Reader), so several instances of a projection split the partitions.
// Offsets are committed only after processing succeeded: at least once.
type Subscriber struct {
	cfg       Config
	logger    watermill.LoggerAdapter
	base      watermill.LoggerAdapter // logger before the group field (busLog adds its own)
	blog      *busLog
	transport *kafka.Transport
	topics    *topicCreator

	ctx    context.Context // cancelled by Close; parent of every consumer
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	closed bool
	// readers are the open group members by topic (Waiting).
	readers map[string]map[*kafka.Reader]struct{}
}

var (
	_ message.Subscriber           = (*Subscriber)(nil)
	_ message.SubscribeInitializer = (*Subscriber)(nil)
)

// NewSubscriber validates cfg (ConsumerGroup is required: without a group
// there are no committed offsets and so no at-least-once) and returns a
// Subscriber that connects when it first subscribes.
func NewSubscriber(cfg Config, logger watermill.LoggerAdapter) (*Subscriber, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.ConsumerGroup == "" {
		return nil, errors.New("bus: subscriber needs a ConsumerGroup")
	}
	if logger == nil {
		logger = watermill.NopLogger{}
	}
	cfg = cfg.withDefaults()
	transport := newTransport(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	return &Subscriber{
		cfg:       cfg,
		logger:    logger.With(watermill.LogFields{"consumer_group": cfg.ConsumerGroup}),
		base:      logger,
		blog:      newBusLog(cfg, logger, "consumer_group", cfg.ConsumerGroup),
		transport: transport,
		topics:    newTopicCreator(cfg, transport),
		ctx:       ctx,
		cancel:    cancel,
		readers:   map[string]map[*kafka.Reader]struct{}{},
	}, nil
}

// SubscribeInitialize creates topic if it is missing, so a consumer that
// starts before any producer still joins a topic with the right partitions.
func (s *Subscriber) SubscribeInitialize(topic string) error {
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.PublishTimeout)
	defer cancel()
	return s.topics.ensure(ctx, topic)
}

// Subscribe implements message.Subscriber. Messages arrive one at a time
// and, per partition, in order: the next is sent only after the previous one
// was Acked (its offset is then committed, batched per CommitInterval) or,
// after a Nack and NackResendDelay, the same message is sent again. The
// channel closes when ctx ends or the Subscriber is closed.
func (s *Subscriber) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	ctx, r, release, err := s.start(ctx, topic, 0, max(s.cfg.CommitInterval, 0))
	if err != nil {
		return nil, err
	}
	out := make(chan *message.Message)
	go func() {
		defer close(out)
		defer release()
		s.consume(ctx, r, out)
	}()
	return out, nil
}

// start registers a consumer and opens its Reader; release closes both.
func (s *Subscriber) start(ctx context.Context, topic string, queue int, commitInterval time.Duration) (context.Context, *kafka.Reader, func(), error) {
	if s.isClosed() {
		return nil, nil, nil, ErrClosed
	}
	ictx, cancel := context.WithTimeout(ctx, s.cfg.PublishTimeout)
	stopInit := context.AfterFunc(s.ctx, cancel)
	err := s.topics.ensure(ictx, topic)
	stopInit()
	cancel()
	if err != nil {
		if s.isClosed() {
			return nil, nil, nil, ErrClosed
		}
		return nil, nil, nil, err
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed { // Close ran while we created the topic
		return nil, nil, nil, ErrClosed
	}
	ctx, cancel = context.WithCancel(ctx)
	stop := context.AfterFunc(s.ctx, cancel)
	rlog := newBusLog(s.cfg, s.base, "consumer_group", s.cfg.ConsumerGroup, "topic", topic)
	r := s.newReader(topic, queue, commitInterval, rlog)
	if s.readers[topic] == nil {
		s.readers[topic] = map[*kafka.Reader]struct{}{}
	}
	s.readers[topic][r] = struct{}{}
	s.wg.Add(1)
	return ctx, r, func() {
		stop()
		cancel()
		s.mu.Lock()
		delete(s.readers[topic], r)
		s.mu.Unlock()
		if err := r.Close(); err != nil {
			rlog.problem("closing reader", err)
		}
		rlog.revokeAll()
		s.wg.Done()
	}, nil
}

// Waiting is how many messages of topic this Subscriber's members have
// fetched from their partitions and not yet handed out: the jobs queued
// behind the ones in hand. A member fetches ahead as messages arrive (up
// to its queue's capacity), so a job published behind a running one is
// counted within a fetch round trip. A consumer that holds a long job asks
// before it gives its partitions up: with nothing behind it, leaving would
// move no job and only cost the group a rebalance.
func (s *Subscriber) Waiting(topic string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for r := range s.readers[topic] {
		// Stats also resets kafka-go's counters; nothing else reads them.
		n += int(r.Stats().QueueLength)
	}
	return n
}

// Peers is how many other members of this Subscriber's group consume
// topic: members subscribed to it whose client id is not this Subscriber's
// (so each process needs a Config.ClientID of its own). A consumer that
// holds a long job asks before it gives its partitions up: with no peer,
// leaving the group would not move the jobs queued behind the running one
// anywhere, and rejoining after it costs every topic of the group a
// rebalance (on Kafka, an emptied group also waits out the broker's
// initial rebalance delay, 3 s by default).
func (s *Subscriber) Peers(ctx context.Context, topic string) (int, error) {
	res, err := s.topics.client.DescribeGroups(ctx, &kafka.DescribeGroupsRequest{GroupIDs: []string{s.cfg.ConsumerGroup}})
	if err != nil {
		return 0, fmt.Errorf("bus: describe group %q: %w", s.cfg.ConsumerGroup, err)
	}
	n := 0
	for _, g := range res.Groups {
		if g.Error != nil {
			return 0, fmt.Errorf("bus: describe group %q: %w", s.cfg.ConsumerGroup, g.Error)
		}
		for _, m := range g.Members {
			if m.ClientID != s.cfg.ClientID && slices.Contains(m.MemberMetadata.Topics, topic) {
				n++
			}
		}
	}
	return n, nil
}

func (s *Subscriber) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// newReader opens a group member for topic. commitInterval 0 makes
// CommitMessages synchronous; otherwise kafka-go sends the highest
// acknowledged offsets every commitInterval and once more when the
// generation or the Reader ends, before leaving the group.
func (s *Subscriber) newReader(topic string, queue int, commitInterval time.Duration, rlog *busLog) *kafka.Reader {
	if queue < 100 {
		queue = 100
	}
	return kafka.NewReader(kafka.ReaderConfig{
		Brokers:           s.cfg.Brokers,
		GroupID:           s.cfg.ConsumerGroup,
		Topic:             topic,
		Dialer:            &kafka.Dialer{ClientID: s.cfg.ClientID, Timeout: 5 * time.Second, DualStack: true},
		QueueCapacity:     queue,
		MinBytes:          1,
		MaxBytes:          10 << 20,
		MaxWait:           500 * time.Millisecond,
		StartOffset:       kafka.FirstOffset, // a new projection replays the whole log
		CommitInterval:    commitInterval,
		HeartbeatInterval: s.cfg.HeartbeatInterval,
		SessionTimeout:    s.cfg.SessionTimeout,
		RebalanceTimeout:  s.cfg.RebalanceTimeout,
		JoinGroupBackoff:  time.Second,
		ReadBackoffMin:    100 * time.Millisecond,
		ReadBackoffMax:    time.Second,
		Logger:            kafkaLogger{l: rlog},
		ErrorLogger:       kafkaLogger{l: rlog, error: true},
	})
}

// consume feeds out until ctx ends.
func (s *Subscriber) consume(ctx context.Context, r *kafka.Reader, out chan<- *message.Message) {
	var failures int
	for {
		km, err := r.FetchMessage(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			failures++
			s.blog.problem("fetching message", err)
			if !sleepCtx(ctx, backoff(failures, s.cfg.RetryBackoffMax)) {
				return
			}
			continue
		}
		failures = 0
		if !s.deliver(ctx, r, km, out) {
			return
		}
	}
}

// deliver hands km to the subscriber until it is Acked (then commits it) and
// reports false if ctx ended first.
func (s *Subscriber) deliver(ctx context.Context, r *kafka.Reader, km kafka.Message, out chan<- *message.Message) bool {
	for {
		msgCtx, cancelMsg := context.WithCancel(ctx)
		msg := fromKafka(msgCtx, km)
		select {
		case out <- msg:
		case <-ctx.Done():
			cancelMsg()
			return false
		}
		select {
		case <-msg.Acked():
			cancelMsg()
			s.commit(ctx, r, km)
			return true
		case <-msg.Nacked():
			cancelMsg()
			if !sleepCtx(ctx, s.cfg.NackResendDelay) {
				return false
			}
		case <-ctx.Done():
			cancelMsg()
			return false
		}
	}
}

// commit records that kms were processed. A failure is logged, not
// returned: the messages were handled, and the worst outcome of a lost
// commit is that they are delivered again, which consumers tolerate.
func (s *Subscriber) commit(ctx context.Context, r *kafka.Reader, kms ...kafka.Message) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
	defer cancel()
	if err := r.CommitMessages(cctx, kms...); err != nil {
		s.blog.problem("committing offsets; messages may be redelivered", err)
	}
}

// BatchHandler processes one batch. Returning an error makes ConsumeBatches
// retry the same batch; nothing after it is committed until it succeeds.
type BatchHandler = func(ctx context.Context, batch []*message.Message) error

// ConsumeBatches is the projections' high-throughput path: it collects up to
// maxBatch messages (waiting at most maxWait after the first one), calls
// handle once for all of them, and commits their offsets only after handle
// returned nil. A failing batch is retried with exponential backoff (capped
// at RetryBackoffMax) until it succeeds or ctx ends, so nothing is lost;
// after a crash or rebalance, uncommitted batches are delivered again.
// Within a batch, each partition's messages keep their log order (so one
// owner's events stay in order); different partitions interleave.
//
// ConsumeBatches blocks until ctx ends (it returns ctx.Err()) or the
// Subscriber is closed (it returns ErrClosed).
func (s *Subscriber) ConsumeBatches(ctx context.Context, topic string, maxBatch int, maxWait time.Duration, handle BatchHandler) error {
	if maxBatch < 1 {
		return fmt.Errorf("bus: maxBatch %d < 1", maxBatch)
	}
	parent := ctx
	ctx, r, release, err := s.start(ctx, topic, maxBatch, 0)
	if err != nil {
		return err
	}
	defer release()
	stopped := func() error {
		if err := parent.Err(); err != nil {
			return err
		}
		return ErrClosed
	}

	var failures int
	for {
		kms, err := s.fetchBatch(ctx, r, maxBatch, maxWait)
		if err != nil {
			if ctx.Err() != nil {
				return stopped()
			}
			failures++
			s.blog.problem("fetching batch", err)
			if !sleepCtx(ctx, backoff(failures, s.cfg.RetryBackoffMax)) {
				return stopped()
			}
			continue
		}
		failures = 0
		for attempt := 1; ; attempt++ {
			batch := make([]*message.Message, len(kms))
			for i, km := range kms {
				batch[i] = fromKafka(ctx, km)
			}
			err := handle(ctx, batch)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return stopped()
			}
			s.logger.Error("batch handler failed; retrying", err, watermill.LogFields{"attempt": attempt, "size": len(kms)})
			if !sleepCtx(ctx, backoff(attempt, s.cfg.RetryBackoffMax)) {
				return stopped()
			}
		}
		s.commit(ctx, r, kms...)
	}
}

// fetchBatch blocks for the first message, then takes what else arrives
// within maxWait, up to maxBatch; it stops gathering once Config.Hurry's
// channel closes.
func (s *Subscriber) fetchBatch(ctx context.Context, r *kafka.Reader, maxBatch int, maxWait time.Duration) ([]kafka.Message, error) {
	first, err := r.FetchMessage(ctx)
	if err != nil {
		return nil, err
	}
	kms := append(make([]kafka.Message, 0, maxBatch), first)
	wctx, cancel := context.WithTimeout(ctx, maxWait)
	defer cancel()
	if s.cfg.Hurry != nil {
		go func(hurry <-chan struct{}) {
			select {
			case <-hurry:
				cancel()
			case <-wctx.Done():
			}
		}(s.cfg.Hurry())
	}
	for len(kms) < maxBatch {
		km, err := r.FetchMessage(wctx)
		if err != nil {
			break // the wait is over (or ctx ended: the caller sees that)
		}
		kms = append(kms, km)
	}
	return kms, nil
}

// Close stops every Subscribe and ConsumeBatches call of this Subscriber,
// leaves the consumer group and waits until they finished, so offsets of
// acknowledged messages are committed before it returns.
func (s *Subscriber) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	s.transport.CloseIdleConnections()
	return nil
}

// backoff returns 100ms·2^(attempt-1), capped at ceiling.
func backoff(attempt int, ceiling time.Duration) time.Duration {
	d := 100 * time.Millisecond
	for i := 1; i < attempt && d < ceiling; i++ {
		d *= 2
	}
	return min(d, ceiling)
}
