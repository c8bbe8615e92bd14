package events

import "bytes"

// TraceErased records that a trace's data key was destroyed (crypto-
// shredding): every payload sealed with it is unreadable from then on, in the
// events table, Kafka segments and backups alike. The payload names who and
// why; it holds nothing of the trace's content and is stored in clear.
const TraceErased = "trace.erased.v1"

// TraceErasedV1 is who erased which trace, when and why.
type TraceErasedV1 struct {
	TraceID string `json:"trace_id"`
	By      string `json:"by"`
	Reason  string `json:"reason"`
	At      string `json:"at"`
}

// Sealed is a payload encrypted with AES-256-GCM under the data key of Key
// (a scope such as "trace/<id>"). The envelope's id, stream and type are the
// additional data: a sealed payload moved to another event does not open.
type Sealed struct {
	Key        string `json:"key"`
	Nonce      []byte `json:"nonce"`
	Ciphertext []byte `json:"ciphertext"`
	// Compression is how the plaintext was compressed before sealing:
	// "s2", or "" for none. Ciphertext does not compress, so the store
	// compresses first, or the row (and the Kafka message) would grow.
	Compression string `json:"z,omitempty"`
	// Redacted is what a TraceQuote payload reads as once the quoted trace
	// is erased (Key is then that trace's): the payload without the quote,
	// sealed with the stream's own key. Readers get it, not an error.
	Redacted *Sealed `json:"redacted,omitempty"`
}

// TraceQuote is a payload on a stream other than a trace's that quotes one
// trace's content: a finding's evidence quote, original and alternative
// actions. The event store seals it with the quoted trace's key, not the
// stream's, so erasing the trace erases the quote wherever the event was
// copied, and keeps Redacted beside it under the stream's key.
type TraceQuote interface {
	// QuotedTrace is the id of the trace quoted.
	QuotedTrace() string
	// Redacted is the payload with everything quoted from the trace
	// removed: what consumers read after the trace's erasure.
	Redacted() any
}

// SealedPayload is the shape of an encrypted event payload.
type SealedPayload struct {
	Sealed *Sealed `json:"sealed"`
}

// IsSealed says whether a stored payload is a SealedPayload. Readers test
// how it begins instead of parsing it: `{"sealed": {` as written, or as
// Postgres's jsonb gives it back (with spaces).
func IsSealed(payload []byte) bool { return StartsWithObject(payload, "sealed") }

// StartsWithObject says whether payload is a JSON object whose first member
// is named key and holds an object, whitespace allowed between tokens.
func StartsWithObject(payload []byte, key string) bool {
	p := skipSpace(payload)
	if len(p) == 0 || p[0] != '{' {
		return false
	}
	p = skipSpace(p[1:])
	if len(p) < len(key)+2 || p[0] != '"' || string(p[1:1+len(key)]) != key || p[1+len(key)] != '"' {
		return false
	}
	p = skipSpace(p[2+len(key):])
	if len(p) == 0 || p[0] != ':' {
		return false
	}
	p = skipSpace(p[1:])
	return len(p) > 0 && p[0] == '{'
}

func skipSpace(p []byte) []byte {
	return bytes.TrimLeft(p, " \t\r\n")
}

// ErasedError is an event sealed with a data key that was destroyed: its
// content is gone for good. Consumers project nothing for it; it is not a
// failure to retry or park.
type ErasedError struct {
	EventID, Type, Stream, Key string
}

func (e *ErasedError) Error() string {
	return "event " + e.EventID + " (" + e.Type + ") of " + e.Stream + " was erased (data key " + e.Key + " destroyed)"
}
