package bus

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// MetadataPartitionKey is the watermill metadata key whose value becomes the
// Kafka message key. The relay sets it to the owner id so that all of one
// owner's events land on one partition and are consumed in order.
const MetadataPartitionKey = "partition_key"

// Default values applied by Config when a field is left zero. They are
// exported so that cmd/critic and tests can refer to them instead of
// repeating magic numbers.
const (
	DefaultTopicPartitions   = 8
	DefaultPublishTimeout    = 10 * time.Second
	DefaultWriteMaxAttempts  = 5
	DefaultBatchSize         = 1000
	DefaultBatchTimeout      = 2 * time.Millisecond
	DefaultBatchBytes        = 1 << 20
	DefaultNackResendDelay   = 100 * time.Millisecond
	DefaultHeartbeatInterval = time.Second
	DefaultSessionTimeout    = 20 * time.Second
	DefaultRebalanceTimeout  = 5 * time.Second
	DefaultRetryBackoffMax   = 5 * time.Second
	DefaultCommitInterval    = time.Second
)

// Config addresses a Kafka-protocol cluster (real or embedded) and tunes the
// client. The same Config shape serves both deployments so that only
// Brokers changes between them.
type Config struct {
	// Brokers are the bootstrap addresses (host:port), from KAFKA_BROKERS or
	// from Embedded.Addrs.
	Brokers []string

	// ConsumerGroup names the consumer group a Subscriber joins. Every
	// projection uses its own group so each one sees every event; members of
	// one group split the partitions between them. Required by NewSubscriber,
	// ignored by NewPublisher.
	ConsumerGroup string

	// ClientID identifies this process in broker logs and quotas, and
	// tells its group members from other processes' (Subscriber.Peers).
	ClientID string

	// TopicPartitions is the partition count used when a topic is missing and
	// we create it. Partitions bound consumer parallelism; 8 is the
	// production default, tests that assert global order use 1.
	TopicPartitions int

	// ReplicationFactor for created topics; 0 means the broker's default
	// (sent as -1, which needs Kafka 2.4+ or kfake).
	ReplicationFactor int

	// PublishTimeout bounds one Publish call, so that the relay sees an error
	// instead of hanging when the broker is down.
	PublishTimeout time.Duration

	// WriteMaxAttempts is how often kafka-go retries a failed produce inside
	// one Publish before giving up.
	WriteMaxAttempts int

	// BatchSize and BatchBytes cap one produce request per partition;
	// BatchTimeout is how long a partially filled batch waits for more
	// messages. Publish hands all its messages to kafka-go at once, so a
	// relay batch of up to BatchSize events costs one round trip per
	// partition, and the short timeout keeps single-event latency low.
	BatchSize    int
	BatchBytes   int64
	BatchTimeout time.Duration

	// NackResendDelay is how long the watermill Subscriber waits before
	// redelivering a Nacked message, so a failing handler does not spin.
	NackResendDelay time.Duration

	// HeartbeatInterval, SessionTimeout and RebalanceTimeout tune the
	// consumer-group protocol. Shorter values make rebalances (a consumer
	// starting or stopping) finish sooner; SessionTimeout must lie within the
	// broker's group.min/max.session.timeout.ms (6 s to 5 min by default).
	//
	// SessionTimeout must stay well above RebalanceTimeout plus the few
	// seconds members take to rejoin (defaults 20 s and 5 s). The embedded
	// broker (kfake) expires a member parked in JoinGroup by its session
	// timer, which a real Kafka does not, and restarts the rebalance wait
	// at every join or expiry; kafka-go gives a JoinGroup RebalanceTimeout
	// + 5 s. With both at 10 s, a rebalance after a kill -9 expired the
	// live members while they waited, their joins timed out, and the groups
	// re-formed over and over for minutes (platform/bus/KFAKE_JOIN_EXPIRY.md).
	HeartbeatInterval time.Duration
	SessionTimeout    time.Duration
	RebalanceTimeout  time.Duration

	// CommitInterval is how often the watermill Subscriber sends the offsets
	// of acknowledged messages to the broker. Committing every message
	// synchronously costs a broker round trip per message and collapses
	// throughput once a few consumers share a broker; batching commits only
	// widens the window of messages redelivered after a crash, which
	// consumers tolerate. Negative commits synchronously after every Ack.
	// ConsumeBatches always commits synchronously, once per batch.
	CommitInterval time.Duration

	// RetryBackoffMax caps the backoff between retries of a failed batch in
	// ConsumeBatches and between failed fetches.
	RetryBackoffMax time.Duration

	// Hurry, when set, is asked at each batch of ConsumeBatches for a
	// channel that closes when someone is waiting for the events a batch
	// gathers: the batch then stops gathering (maxWait) and is handled at
	// once. The query snapshot gathers 100 ms of events per batch to save
	// DuckDB commits; a query waiting for the caller's last write should
	// not wait that out.
	Hurry func() <-chan struct{}

	// Logger, when set, receives the bus's and kafka-go's lines at their
	// proper levels (WARN for rate-limited transient errors, INFO when a
	// member's partitions move); nil uses the watermill logger given to
	// the constructor (which has no WARN: those lines go at INFO).
	Logger *slog.Logger
}

// withDefaults returns a copy of c with zero fields set to their defaults.
func (c Config) withDefaults() Config {
	c.ClientID = cmp.Or(c.ClientID, "critic")
	c.TopicPartitions = cmp.Or(c.TopicPartitions, DefaultTopicPartitions)
	c.PublishTimeout = cmp.Or(c.PublishTimeout, DefaultPublishTimeout)
	c.WriteMaxAttempts = cmp.Or(c.WriteMaxAttempts, DefaultWriteMaxAttempts)
	c.BatchSize = cmp.Or(c.BatchSize, DefaultBatchSize)
	c.BatchBytes = cmp.Or(c.BatchBytes, DefaultBatchBytes)
	c.BatchTimeout = cmp.Or(c.BatchTimeout, DefaultBatchTimeout)
	c.NackResendDelay = cmp.Or(c.NackResendDelay, DefaultNackResendDelay)
	c.HeartbeatInterval = cmp.Or(c.HeartbeatInterval, DefaultHeartbeatInterval)
	c.SessionTimeout = cmp.Or(c.SessionTimeout, DefaultSessionTimeout)
	c.RebalanceTimeout = cmp.Or(c.RebalanceTimeout, DefaultRebalanceTimeout)
	c.CommitInterval = cmp.Or(c.CommitInterval, DefaultCommitInterval)
	c.RetryBackoffMax = cmp.Or(c.RetryBackoffMax, DefaultRetryBackoffMax)
	return c
}

// Validate reports configuration mistakes at start-up rather than as
// confusing broker errors later.
func (c Config) Validate() error {
	var errs []error
	if len(c.Brokers) == 0 {
		errs = append(errs, errors.New("bus: no brokers (set KAFKA_BROKERS or start the embedded broker)"))
	}
	for _, b := range c.Brokers {
		if b == "" {
			errs = append(errs, errors.New("bus: empty broker address"))
		}
	}
	if c.TopicPartitions < 0 {
		errs = append(errs, fmt.Errorf("bus: TopicPartitions %d < 0", c.TopicPartitions))
	}
	if c.ReplicationFactor < 0 {
		errs = append(errs, fmt.Errorf("bus: ReplicationFactor %d < 0", c.ReplicationFactor))
	}
	if c.BatchSize < 0 || c.BatchBytes < 0 || c.WriteMaxAttempts < 0 {
		errs = append(errs, errors.New("bus: negative batch or retry setting"))
	}
	for _, d := range []struct {
		name string
		d    time.Duration
	}{
		{"PublishTimeout", c.PublishTimeout}, {"BatchTimeout", c.BatchTimeout},
		{"NackResendDelay", c.NackResendDelay}, {"HeartbeatInterval", c.HeartbeatInterval},
		{"SessionTimeout", c.SessionTimeout}, {"RebalanceTimeout", c.RebalanceTimeout},
		{"RetryBackoffMax", c.RetryBackoffMax},
	} {
		if d.d < 0 {
			errs = append(errs, fmt.Errorf("bus: %s %s < 0", d.name, d.d))
		}
	}
	return errors.Join(errs...)
}
