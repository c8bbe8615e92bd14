package projections

import (
	"context"
	"encoding/json"
	"strconv"
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

// Batch limits of Guard.Run. A batch is one transaction of the projection, so a
// bulk import of a few thousand traces lands in a handful of transactions;
// the short wait only gathers what is already in flight and keeps the
// latency of a single event low.
const (
	maxBatch = 2000
	maxWait  = time.Millisecond
)

// DecodeEnvelope decodes a bus message into e, exactly as json.Unmarshal
// would. The common shape (what the relay writes: known keys, plain ASCII
// strings) takes a fast path that slices the payload out of the message
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
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return skipWS(b, i+1) == len(b)
	}
	for {
		key, j, ok := plainString(b, i)
		if !ok {
			return false
		}
		i = skipWS(b, j)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		i = skipWS(b, i+1)
		switch string(key) {
		case "seq", "version":
			j = i
			for j < len(b) && (b[j] == '-' || (b[j] >= '0' && b[j] <= '9')) {
				j++
			}
			n, err := strconv.ParseInt(string(b[i:j]), 10, 64)
			if err != nil || (j < len(b) && (b[j] == '.' || b[j] == 'e' || b[j] == 'E')) {
				return false
			}
			if key[0] == 's' {
				e.Seq = n
			} else {
				e.Version = n
			}
			i = j
		case "id", "stream", "owner_id", "type", "actor", "causation_id", "correlation_id":
			s, j, ok := plainString(b, i)
			if !ok {
				return false
			}
			v := string(s)
			switch string(key) {
			case "id":
				e.ID = v
			case "stream":
				e.Stream = v
			case "owner_id":
				e.OwnerID = v
			case "type":
				e.Type = v
			case "actor":
				e.Actor = v
			case "causation_id":
				e.CausationID = v
			case "correlation_id":
				e.CorrelationID = v
			}
			i = j
		case "recorded_at":
			_, j, ok := plainString(b, i)
			if !ok || e.RecordedAt.UnmarshalJSON(b[i:j]) != nil {
				return false
			}
			i = j
		case "payload":
			j, ok := skipValue(b, i)
			if !ok {
				return false
			}
			e.Payload = json.RawMessage(b[i:j])
			i = j
		default:
			return false // unknown or differently cased key: json.Unmarshal's rules apply
		}
		i = skipWS(b, i)
		if i >= len(b) {
			return false
		}
		if b[i] == '}' {
			return skipWS(b, i+1) == len(b)
		}
		if b[i] != ',' {
			return false
		}
		i = skipWS(b, i+1)
	}
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// plainString reads a JSON string at b[i] that needs no unescaping: printable
// ASCII without backslashes. It returns its contents and the index after it.
func plainString(b []byte, i int) ([]byte, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, i, false
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return b[i+1 : j], j + 1, true
		case c < 0x20 || c == '\\' || c >= 0x80:
			return nil, i, false
		}
	}
	return nil, i, false
}

// skipValue returns the index after the JSON value at b[i]. It follows
// strings and nesting; the value's full validity is checked by whoever
// decodes it.
func skipValue(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch b[i] {
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				k, ok := skipString(b, j)
				if !ok {
					return j, false
				}
				j = k - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, true
				}
			}
		}
		return i, false
	case '"':
		return skipString(b, i)
	default:
		j := i
		for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\t' && b[j] != '\n' && b[j] != '\r' {
			j++
		}
		if j == i || !json.Valid(b[i:j]) {
			return i, false
		}
		return j, true
	}
}

// skipString returns the index after the JSON string starting at b[i].
func skipString(b []byte, i int) (int, bool) {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1, true
		}
	}
	return i, false
}
