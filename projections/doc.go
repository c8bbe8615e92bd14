// Package projections holds the consumers of critic.events. Each projection has
// a stable name (its Kafka consumer group and dedupe key), applies events in
// the order of one owner's partition, and records the ids it applied in the
// same transaction as their effect, so at-least-once delivery is harmless.
package projections
