// Package projections holds the consumers of critic.events. Each projection has
// a stable name (its Kafka consumer group and dedupe key), applies events in
// the order of one owner's partition, and records the ids it applied in the
// same transaction as their effect, so at-least-once delivery is harmless.
//
// Every projection runs behind a Guard (guard.go): an event it cannot apply
// is retried a bounded number of times, then parked, holding back only its
// owner's later events until `critic projections retry`. Calls flow from the
// bus (Guard.Run → Guard.Handle) into a projection's Apply; nothing here
// calls the API.
package projections
