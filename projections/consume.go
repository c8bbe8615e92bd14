package projections

import (
	"context"
	"encoding/json"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/platform/jsonscan"
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

// Batch limits of Guard.Run. A batch is one transaction of the projection, so a
// bulk import of a few thousand traces lands in a handful of transactions;
// the short wait only gathers what is already in flight and keeps the
// latency of a single event low.
const (
	maxBatch = 2000
	maxWait  = time.Millisecond
)

// Observer sees every batch a projection applied or failed to apply:
// metrics and tracing hang off it.
type Observer interface {
	BatchApplied(ctx context.Context, projection string, start time.Time, envs []events.Envelope, err error)
}

// DecodeEnvelope decodes a bus message into e, exactly as json.Unmarshal
// would. The common shape (what the relay writes: known keys) takes the
// platform/jsonscan fast path, which slices the payload out of the message
// instead of validating and copying it: the payload is the bulk of every
// message, and whoever needs it decodes (and so validates) it anyway.
// Anything else falls back to json.Unmarshal.
func DecodeEnvelope(raw []byte, e *events.Envelope) error {
	if decodeEnvelopeFast(raw, e) {
		return nil
	}
	*e = events.Envelope{}
	return json.Unmarshal(raw, e)
}

func decodeEnvelopeFast(b []byte, e *events.Envelope) bool {
	*e = events.Envelope{}
	s := jsonscan.New(b)
	ok := s.Object(func(k []byte) bool {
		switch string(k) {
		case "seq":
			return s.Int64(&e.Seq)
		case "version":
			return s.Int64(&e.Version)
		case "id":
			return s.Str(&e.ID)
		case "stream":
			return s.Str(&e.Stream)
		case "owner_id":
			return s.Str(&e.OwnerID)
		case "type":
			return s.Str(&e.Type)
		case "actor":
			return s.Str(&e.Actor)
		case "causation_id":
			return s.Str(&e.CausationID)
		case "correlation_id":
			return s.Str(&e.CorrelationID)
		case "recorded_at":
			raw, ok := s.Raw()
			return ok && e.RecordedAt.UnmarshalJSON(raw) == nil
		case "payload":
			raw, ok := s.Raw()
			e.Payload = json.RawMessage(raw)
			return ok
		}
		return false // unknown or differently cased key: json.Unmarshal's rules apply
	})
	return ok && s.End()
}
