package projections

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/criticml/critic/domain/events"
)

// ConsumeFunc is what a projection needs from the bus: batches of messages
// from one topic, committed only after handle returns nil (the bus
// Subscriber's ConsumeBatches).
type ConsumeFunc func(ctx context.Context, topic string, maxBatch int, maxWait time.Duration,
	handle func(ctx context.Context, batch []*message.Message) error) error

// Applier applies a batch of envelopes atomically.
type Applier interface {
	Apply(ctx context.Context, envs []events.Envelope) error
}

// Run feeds a projection from the bus until ctx ends.
func Run(ctx context.Context, consume ConsumeFunc, topic string, a Applier) error {
	return consume(ctx, topic, 500, 5*time.Millisecond, func(ctx context.Context, batch []*message.Message) error {
		envs := make([]events.Envelope, 0, len(batch))
		for _, m := range batch {
			var e events.Envelope
			if err := json.Unmarshal(m.Payload, &e); err != nil {
				return fmt.Errorf("decode event %s: %w", m.UUID, err)
			}
			envs = append(envs, e)
		}
		return a.Apply(ctx, envs)
	})
}
