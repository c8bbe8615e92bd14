// Package events defines the event envelope and one payload struct per event
// type, grouped by aggregate (one file each). These are the only facts Critic
// stores; read models, snapshots and job dispatch are derived from them.
// Renaming a type string is a migration, not a refactor: old events keep theirs.
package events

import (
	"bytes"
	"encoding/json"
	"time"
)

// Envelope is one row of the `events` table and one Kafka message on
// critic.events.
type Envelope struct {
	Seq           int64           `json:"seq"`
	ID            string          `json:"id"`
	Stream        string          `json:"stream"`
	Version       int64           `json:"version"`
	OwnerID       string          `json:"owner_id"`
	Type          string          `json:"type"`
	Actor         string          `json:"actor"`
	CausationID   string          `json:"causation_id,omitempty"`
	CorrelationID string          `json:"correlation_id,omitempty"`
	RecordedAt    time.Time       `json:"recorded_at"`
	Payload       json.RawMessage `json:"payload"`
}

// Decode unmarshals the payload into v. Numbers inside free-form maps stay
// json.Number, so ids and large integers in metadata survive a round trip.
func (e Envelope) Decode(v any) error {
	dec := json.NewDecoder(bytes.NewReader(e.Payload))
	dec.UseNumber()
	return dec.Decode(v)
}

// New is an event a command decided on, before the store gives it a sequence
// number, a version and a time.
type New struct {
	ID      string
	Stream  string
	OwnerID string
	Type    string
	Payload any
}

// ClaimCheck replaces a payload over the inline limit: the payload lives in the
// blob store under Key and consumers fetch it and verify SHA256.
type ClaimCheck struct {
	Key    string `json:"key"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// ClaimCheckPayload is the shape of an event payload stored by reference.
type ClaimCheckPayload struct {
	ClaimCheck *ClaimCheck `json:"claim_check"`
}

// Stream names, one prefix per aggregate.
func UserStream(id string) string    { return "user/" + id }
func UserNameStream(n string) string { return "user_name/" + n }
func TraceStream(id string) string   { return "trace/" + id }
func APIKeyStream(id string) string  { return "api_key/" + id }

// UnreadableError is a stored event whose payload does not decode into its
// type's struct. Every consumer of the log — command-side aggregates, read
// models, snapshots, dispatch — meets it the same way: as an error naming
// the event, never as a silently zero payload.
type UnreadableError struct {
	EventID, Type, Stream string
	Err                   error
}

func (e *UnreadableError) Error() string {
	return "event " + e.EventID + " (" + e.Type + ") of " + e.Stream + " cannot be read: " + e.Err.Error()
}

func (e *UnreadableError) Unwrap() error { return e.Err }

// DecodeOrFail is Decode with the failure named as an UnreadableError.
func (e Envelope) DecodeOrFail(v any) error {
	if err := e.Decode(v); err != nil {
		return &UnreadableError{EventID: e.ID, Type: e.Type, Stream: e.Stream, Err: err}
	}
	return nil
}

// Fold applies a stream's events, oldest first, to a zero state: how every
// aggregate is rebuilt from its stream. An event that cannot be read stops
// it, with the zero state.
func Fold[S any, P interface {
	*S
	Apply(Envelope) error
}](stream []Envelope) (S, error) {
	var s S
	for _, e := range stream {
		if err := P(&s).Apply(e); err != nil {
			var zero S
			return zero, err
		}
	}
	return s, nil
}
