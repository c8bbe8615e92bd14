package eventstore

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/platform/jsonscan"
)

// A sealed payload is read by hand rather than by encoding/json: every
// consumer (read model, query snapshot, dispatcher) opens every sealed
// event, and encoding/json's validating scan and reflective base64 decoding
// of the ciphertext cost more than AES-GCM and S2 together (profile of make
// bench-ingest-encryption; about 4× this reader). Anything the reader does
// not expect (escapes, other members, other value types) is read by
// encoding/json, so both always agree. Writing stays json.Marshal: it is
// as fast as a hand-written writer.

// errUnusual is a payload the hand-written reader leaves to encoding/json.
var errUnusual = errors.New("unusual sealed payload")

// decodeSealed reads a stored sealed payload (as written, or as Postgres's
// jsonb gives it back: members reordered, spaces after ':' and ','). It is
// json.Unmarshal into events.SealedPayload, without its cost for the usual
// shape.
func decodeSealed(payload []byte) (*events.Sealed, error) {
	if s, err := scanSealedPayload(payload); err == nil {
		return s, nil
	}
	var sp events.SealedPayload
	if err := json.Unmarshal(payload, &sp); err != nil {
		return nil, err
	}
	if sp.Sealed == nil {
		return nil, errors.New("no sealed object")
	}
	return sp.Sealed, nil
}

func scanSealedPayload(p []byte) (*events.Sealed, error) {
	r := &sealReader{jsonscan.Scanner{B: p}}
	if !r.Expect('{') {
		return nil, errUnusual
	}
	if name, ok := r.name(); !ok || string(name) != "sealed" {
		return nil, errUnusual
	}
	s, err := r.sealed()
	if err != nil || !r.Expect('}') || !r.End() {
		return nil, errUnusual
	}
	return s, nil
}

// sealReader reads the few JSON shapes a sealed payload is made of.
type sealReader struct{ jsonscan.Scanner }

// str returns the bytes of a JSON string without escapes (the slice aliases
// the payload).
func (r *sealReader) str() ([]byte, bool) {
	if !r.Expect('"') {
		return nil, false
	}
	end := bytes.IndexByte(r.B[r.I:], '"')
	if end < 0 {
		return nil, false
	}
	s := r.B[r.I : r.I+end]
	if bytes.IndexByte(s, '\\') >= 0 {
		return nil, false
	}
	r.I += end + 1
	return s, true
}

// plain says whether s is printable ASCII: anything else (a control
// character is invalid JSON, other bytes are UTF-8 to check) is left to
// encoding/json.
func plain(s []byte) bool {
	for _, c := range s {
		if c < 0x20 || c >= 0x80 {
			return false
		}
	}
	return true
}

// name reads a member name and its colon.
func (r *sealReader) name() ([]byte, bool) {
	n, ok := r.Key()
	return n, ok && plain(n)
}

// bytesValue reads a base64 string, or null as encoding/json does (nil).
func (r *sealReader) bytesValue() ([]byte, error) {
	if r.Null() {
		return nil, nil
	}
	s, ok := r.str()
	// Base64 decoding rejects every byte outside its alphabet but the
	// newlines, which JSON does not allow raw in a string.
	if !ok || bytes.IndexByte(s, '\n') >= 0 || bytes.IndexByte(s, '\r') >= 0 {
		return nil, errUnusual
	}
	out := make([]byte, base64.StdEncoding.DecodedLen(len(s)))
	n, err := base64.StdEncoding.Decode(out, s)
	if err != nil {
		return nil, errUnusual
	}
	return out[:n], nil
}

// memberBit names the members of events.Sealed the reader knows.
// A quote's redacted form (rare) is left to encoding/json.
var memberBit = map[string]uint8{"key": 1, "nonce": 2, "ciphertext": 4, "z": 8}

// sealed reads an events.Sealed object.
func (r *sealReader) sealed() (*events.Sealed, error) {
	if !r.Expect('{') {
		return nil, errUnusual
	}
	s := &events.Sealed{}
	var seen uint8
	for first := true; ; first = false {
		if r.Expect('}') {
			return s, nil
		}
		if !first && !r.Expect(',') {
			return nil, errUnusual
		}
		name, ok := r.name()
		bit := memberBit[string(name)]
		if !ok || bit == 0 || seen&bit != 0 {
			return nil, errUnusual // another member, or one repeated: encoding/json's rules
		}
		seen |= bit
		var err error
		switch string(name) {
		case "key", "z":
			v, ok := r.str()
			if !ok || !plain(v) {
				return nil, errUnusual
			}
			if string(name) == "key" {
				s.Key = string(v)
			} else {
				s.Compression = string(v)
			}
		case "nonce":
			s.Nonce, err = r.bytesValue()
		case "ciphertext":
			s.Ciphertext, err = r.bytesValue()
		}
		if err != nil {
			return nil, err
		}
	}
}
