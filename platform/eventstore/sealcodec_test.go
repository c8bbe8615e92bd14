package eventstore

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/platform/pg/pgtest"
)

// The hand-written sealed-payload reader is encoding/json's, for what the
// store writes, for what Postgres's jsonb gives back (members reordered,
// spaces), and for every unusual input (which it leaves to encoding/json):
// the same value, or an error where encoding/json has one.
func TestSealedReaderIsEncodingJSON(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	ct := make([]byte, 3000)
	for i := range ct {
		ct[i] = byte(i * 7)
	}
	values := []*events.Sealed{
		{Key: "trace/4f0c6a4e-3b55-4a35-9b83-0f1d3c7b2f10", Nonce: []byte("0123456789ab"), Ciphertext: ct, Compression: "s2"},
		{Key: "account/x", Nonce: []byte{}, Ciphertext: []byte{1}},
		{Key: "", Nonce: nil, Ciphertext: nil},
		{Key: "a<b>&\"c\"\\é\n", Nonce: []byte{0}, Ciphertext: ct[:5], Compression: "s2"},
	}
	for _, s := range values {
		got, err := json.Marshal(events.SealedPayload{Sealed: s})
		require.NoError(t, err)
		var fromJSONB string
		require.NoError(t, pool.QueryRow(ctx, "SELECT $1::jsonb::text", string(got)).Scan(&fromJSONB))
		for _, stored := range []string{string(got), fromJSONB} {
			back, err := decodeSealed([]byte(stored))
			require.NoError(t, err, stored)
			var sp events.SealedPayload
			require.NoError(t, json.Unmarshal([]byte(stored), &sp))
			require.Equal(t, sp.Sealed, back, stored)
			if s.Key != values[3].Key {
				_, err := scanSealedPayload([]byte(stored))
				require.NoError(t, err, "read without encoding/json: %s", stored)
			}
		}
	}

	unusual := []string{
		`{"sealed":{"key":"trace\/a","nonce":"AAAA","ciphertext":"AQID"}}`,                // an escape
		`{"sealed":{"Key":"trace/a","nonce":"AAAA","ciphertext":"AQID"}}`,                 // a case-folded name
		`{"sealed":{"key":"trace/a","key":"trace/b","nonce":"AAAA"}}`,                     // a repeated member
		`{"sealed":{"key":"trace/a","other":1,"ciphertext":"AQID"}}`,                      // another member
		`{"sealed":{"key":"trace/a"},"more":true}`,                                        // another outer member
		`{"sealed":{"key":"trace/a","nonce":"AAA","ciphertext":"AQID"}}`,                  // bad base64
		"{\"sealed\":{\"key\":\"trace/a\",\"nonce\":\"AA\nAA\",\"ciphertext\":\"AQID\"}}", // a raw newline
		"{\"sealed\":{\"key\":\"trace/\ta\",\"nonce\":\"AAAA\",\"ciphertext\":\"AQID\"}}", // a raw tab
		`{"sealed":{"key":"trace/a","nonce":"AA\nAA","ciphertext":"AQID"}}`,               // an escape in base64
		`{"sealed":{"key":"trace/\u00e9","nonce":null,"ciphertext":"AQID"}}`,              // null bytes, a \u escape
		`{"sealed":{"key":"trace/a","nonce":"AAAA","ciphertext":"AQID"}`,                  // truncated
		`{"sealed":{"key":"trace/a","nonce":"AAAA","ciphertext":"AQID"}} x`,               // trailing text
		`{"sealed":null}`, // no object
		`{"sealed":{"key":"trace/a","redacted":null,"z":"s2","nonce":"AAAA"}} `,                                                                       // null redacted, trailing space
		"{\"sealed\":{\"key\":\"trace/\xff\",\"nonce\":\"AAAA\"}}",                                                                                    // invalid UTF-8
		"{\"sealed\":{\"key\":\"trace/\u00e9\",\"nonce\":\"AAAA\"}}",                                                                                  // UTF-8
		`{"sealed":{"key":"trace/q","nonce":"AAAA","ciphertext":"AQID","z":"s2","redacted":{"key":"criteria/a","nonce":"AAAA","ciphertext":"AQID"}}}`, // a quote's redacted form
	}
	for _, in := range unusual {
		var sp events.SealedPayload
		jerr := json.Unmarshal([]byte(in), &sp)
		got, err := decodeSealed([]byte(in))
		if jerr != nil || sp.Sealed == nil {
			require.Error(t, err, in)
			continue
		}
		require.NoError(t, err, in)
		require.Equal(t, sp.Sealed, got, in)
	}
}
