// Package bus carries every event to every consumer over the Kafka protocol.
//
// It exists so that the rest of Critic speaks one protocol whatever the
// deployment: a single machine runs an embedded franz-go kfake broker
// (StartEmbedded) persisted under the data directory, a distributed one points
// KAFKA_BROKERS at Apache Kafka, Redpanda or MSK, and Publisher and Subscriber
// do not know the difference.
//
// Publisher and Subscriber implement watermill's message.Publisher and
// message.Subscriber on github.com/segmentio/kafka-go (not watermill-kafka,
// which needs sarama). Delivery is at least once: a Subscriber commits a
// partition offset only after the handler acknowledged the message (or, for
// ConsumeBatches, after the batch handler returned nil), so a crash or
// rebalance replays messages and every consumer must deduplicate by event id.
package bus
