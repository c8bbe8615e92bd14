package apiserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/handlers/idempotency"
	criticv1 "github.com/criticml/critic/schema/gen/critic/v1"
	"github.com/criticml/critic/schema/gen/critic/v1/criticv1connect"
)

// anonymousTrace is an import without an external id. Its trace is keyed
// by its content, so a second run of it is "unchanged" (spec: re-import keeps
// review work): a duplicate execution shows in the answer's unchanged count
// rather than in a second trace.
const anonymousTrace = `{"steps":[{"role":"user","content":"Refund my order"},{"role":"assistant","content":"Done."}]}`

func (e *opsEnv) traceCount(t *testing.T) int {
	var n int
	require.NoError(t, e.pool.QueryRow(context.Background(), `SELECT count(*) FROM rm_traces WHERE owner_id = $1`, e.userID).Scan(&n))
	return n
}

func errorCode(t *testing.T, r reply) string {
	var b struct {
		Code string `json:"code"`
	}
	require.NoError(t, json.Unmarshal(r.body, &b), string(r.body))
	return b.Code
}

// TestIdempotencyKeyOnREST: a retry with the same key answers the first
// answer (status, body) and appends nothing; the same key with another body
// is 422; a key still in flight is 409 with Retry-After; an attempt whose
// instance died is taken over when it stored nothing and reported when it
// did; an expired key runs again; keys are per account; a malformed key is
// 422.
func TestIdempotencyKeyOnREST(t *testing.T) {
	e := startOps(t, nil)
	ctx := context.Background()
	imp := map[string]any{"format": "stash", "data": anonymousTrace}

	first := e.do(t, "POST", "/api/v1/rm/traces/import", imp, "Idempotency-Key", "k-1")
	require.Equal(t, http.StatusOK, first.status, string(first.body))
	require.Empty(t, first.header.Get(idempotency.ReplayedHeader))
	events := eventCount(t, e.pool)
	require.Equal(t, 1, e.traceCount(t))

	again := e.do(t, "POST", "/api/v1/rm/traces/import", imp, "Idempotency-Key", "k-1")
	require.Equal(t, http.StatusOK, again.status)
	require.Equal(t, string(first.body), string(again.body), "the original answer")
	require.Equal(t, "true", again.header.Get(idempotency.ReplayedHeader))
	require.Equal(t, first.header.Get("Content-Type"), again.header.Get("Content-Type"))
	require.Equal(t, events, eventCount(t, e.pool), "nothing appended")
	require.Equal(t, 1, e.traceCount(t))
	// The structured-field form of the same key is the same key.
	quoted := e.do(t, "POST", "/api/v1/rm/traces/import", imp, "Idempotency-Key", `"k-1"`)
	require.Equal(t, string(first.body), string(quoted.body))

	other := e.do(t, "POST", "/api/v1/rm/traces/import", map[string]any{"format": "stash", "data": traceLine("different")}, "Idempotency-Key", "k-1")
	require.Equal(t, http.StatusUnprocessableEntity, other.status, string(other.body))
	require.Equal(t, "idempotency_key_reused", errorCode(t, other))
	otherPath := e.do(t, "POST", "/api/v1/rm/reward-models", map[string]any{}, "Idempotency-Key", "k-1")
	require.Equal(t, http.StatusUnprocessableEntity, otherPath.status)
	require.Equal(t, events, eventCount(t, e.pool))

	// Without a key, the same request runs again: the same content is
	// unchanged, not a second trace.
	rerun := e.do(t, "POST", "/api/v1/rm/traces/import", imp)
	require.Equal(t, http.StatusOK, rerun.status)
	require.Empty(t, rerun.header.Get(idempotency.ReplayedHeader))
	require.Contains(t, string(rerun.body), `"unchanged":1`)
	require.Equal(t, 1, e.traceCount(t))
	events = eventCount(t, e.pool)

	// Still in flight (its instance renews the lease): 409, retry later.
	_, err := e.pool.Exec(ctx, `UPDATE idempotency_keys SET state = 'in_flight', lease_until = now() + interval '1 hour' WHERE key = 'k-1'`)
	require.NoError(t, err)
	busy := e.do(t, "POST", "/api/v1/rm/traces/import", imp, "Idempotency-Key", "k-1")
	require.Equal(t, http.StatusConflict, busy.status, string(busy.body))
	require.Equal(t, "idempotency_key_in_flight", errorCode(t, busy))
	require.Equal(t, "1", busy.header.Get("Retry-After"))

	// Its instance died after storing the write: the retry says so and
	// writes nothing.
	_, err = e.pool.Exec(ctx, `UPDATE idempotency_keys SET lease_until = now() - interval '1 second' WHERE key = 'k-1'`)
	require.NoError(t, err)
	lost := e.do(t, "POST", "/api/v1/rm/traces/import", imp, "Idempotency-Key", "k-1")
	require.Equal(t, http.StatusConflict, lost.status, string(lost.body))
	require.Equal(t, "idempotent_request_interrupted", errorCode(t, lost))
	require.Equal(t, events, eventCount(t, e.pool))

	// Its instance died before storing anything: the retry runs it.
	_, err = e.pool.Exec(ctx, `UPDATE idempotency_keys SET request_id = 'never-stored', start_seq = (SELECT max(seq) FROM events) WHERE key = 'k-1'`)
	require.NoError(t, err)
	taken := e.do(t, "POST", "/api/v1/rm/traces/import", imp, "Idempotency-Key", "k-1")
	require.Equal(t, http.StatusOK, taken.status, string(taken.body))
	require.Empty(t, taken.header.Get(idempotency.ReplayedHeader))
	require.Contains(t, string(taken.body), `"unchanged":1`, "it ran against the stored trace")
	require.Equal(t, 1, e.traceCount(t))
	replayed := e.do(t, "POST", "/api/v1/rm/traces/import", imp, "Idempotency-Key", "k-1")
	require.Equal(t, string(taken.body), string(replayed.body), "and its answer is the one kept")
	require.Equal(t, "true", replayed.header.Get(idempotency.ReplayedHeader))
	require.Equal(t, 1, e.traceCount(t))

	// Expired keys are forgotten (and swept).
	_, err = e.pool.Exec(ctx, `UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE key = 'k-1'`)
	require.NoError(t, err)
	fresh := e.do(t, "POST", "/api/v1/rm/traces/import", imp, "Idempotency-Key", "k-1")
	require.Equal(t, http.StatusOK, fresh.status)
	require.Empty(t, fresh.header.Get(idempotency.ReplayedHeader), "a forgotten key runs the request again")
	require.Equal(t, 1, e.traceCount(t))
	var expiresIn float64
	require.NoError(t, e.pool.QueryRow(ctx, `SELECT extract(epoch FROM expires_at - created_at) FROM idempotency_keys WHERE key = 'k-1'`).Scan(&expiresIn))
	require.InDelta(t, 24*3600, expiresIn, 1, "keys live 24 h")
	_, err = e.pool.Exec(ctx, `UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE key = 'k-1'`)
	require.NoError(t, err)
	n, err := idempotency.NewStore(e.pool, 0, 0).Sweep(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)

	// Keys are per account: another account's k-1 is its own.
	otherUser, err := e.srv.Cmds.CreateUser.Handle(ctx, commands.CreateUser{Name: "someone-else"})
	require.NoError(t, err)
	require.NoError(t, e.srv.Waiter.Wait(ctx, otherUser.LastEventID))
	mine := e.key
	e.key = otherUser.APIKey
	theirs := e.do(t, "POST", "/api/v1/rm/traces/import", map[string]any{"format": "stash", "data": traceLine("theirs")}, "Idempotency-Key", "k-2")
	e.key = mine
	require.Equal(t, http.StatusOK, theirs.status)
	minesToo := e.do(t, "POST", "/api/v1/rm/traces/import", imp, "Idempotency-Key", "k-2")
	require.Equal(t, http.StatusOK, minesToo.status, string(minesToo.body))
	require.Empty(t, minesToo.header.Get(idempotency.ReplayedHeader))

	// A 4xx is an answer too: replayed, not re-run.
	bad := e.do(t, "POST", "/api/v1/rm/traces/import", map[string]any{"format": "stash", "data": "{broken"}, "Idempotency-Key", "k-3")
	require.Equal(t, http.StatusUnprocessableEntity, bad.status)
	badAgain := e.do(t, "POST", "/api/v1/rm/traces/import", map[string]any{"format": "stash", "data": "{broken"}, "Idempotency-Key", "k-3")
	require.Equal(t, "true", badAgain.header.Get(idempotency.ReplayedHeader))
	require.Equal(t, http.StatusUnprocessableEntity, badAgain.status)

	malformed := e.do(t, "POST", "/api/v1/rm/traces/import", imp, "Idempotency-Key", "has space")
	require.Equal(t, http.StatusUnprocessableEntity, malformed.status)
	require.Equal(t, "invalid_idempotency_key", errorCode(t, malformed))
	// Without a valid API key the route answers as always.
	e.key = "wrong"
	require.Equal(t, http.StatusUnauthorized, e.do(t, "POST", "/api/v1/rm/traces/import", imp, "Idempotency-Key", "k-4").status)
	require.Equal(t, http.StatusUnauthorized, e.do(t, "POST", "/api/v1/rm/traces/import", imp, "Idempotency-Key", "has space").status,
		"the key is checked after the API key")
}

// TestIdempotencyKeyOnConnect: the same header on a Connect write RPC, over
// the Connect protocol and over gRPC (whose status travels in trailers):
// a retry answers the first response and appends nothing; another request
// under the same key is InvalidArgument.
func TestIdempotencyKeyOnConnect(t *testing.T) {
	e := startOps(t, nil)
	h2c := &http.Transport{}
	h2c.Protocols = new(http.Protocols)
	h2c.Protocols.SetUnencryptedHTTP2(true)
	clients := map[string]criticv1connect.TraceServiceClient{
		"connect": criticv1connect.NewTraceServiceClient(http.DefaultClient, e.url),
		"grpc":    criticv1connect.NewTraceServiceClient(&http.Client{Transport: h2c}, e.url, connect.WithGRPC()),
	}
	imported := 0
	for name, c := range clients {
		call := func(key, data string) (*connect.Response[criticv1.ImportTracesResponse], error) {
			req := connect.NewRequest(&criticv1.ImportTracesRequest{Format: "stash", Data: data})
			req.Header().Set("Authorization", "Bearer "+e.key)
			req.Header().Set("Idempotency-Key", key)
			return c.ImportTraces(context.Background(), req)
		}
		// Each client imports content of its own: the same content would be
		// the same (unchanged) trace.
		data := strings.Replace(anonymousTrace, "Refund my order", "Refund my order via "+name, 1)
		first, err := call("c-"+name, data)
		require.NoError(t, err, name)
		imported++
		events := eventCount(t, e.pool)
		again, err := call("c-"+name, data)
		require.NoError(t, err, name)
		require.Equal(t, first.Msg.TraceIds, again.Msg.TraceIds, name)
		require.Equal(t, "true", again.Header().Get(idempotency.ReplayedHeader), name)
		require.Equal(t, events, eventCount(t, e.pool), name)
		require.Equal(t, imported, e.traceCount(t), name)

		_, err = call("c-"+name, traceLine("other-"+name))
		require.Equal(t, connect.CodeInvalidArgument, connect.CodeOf(err), "%s: %v", name, err)
		require.Contains(t, err.Error(), "already used for a different request")
		require.Equal(t, events, eventCount(t, e.pool), name)
	}
}

// TestIdempotencyKeyConcurrentDuplicates: the same keyed write sent many
// times at once is stored once; every copy is answered the first answer,
// or 409 while it is in flight — never a second write.
func TestIdempotencyKeyConcurrentDuplicates(t *testing.T) {
	e := startOps(t, nil)
	imp := map[string]any{"format": "stash", "data": anonymousTrace}
	const n = 8
	replies := make([]reply, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			replies[i] = e.do(t, "POST", "/api/v1/rm/traces/import", imp, "Idempotency-Key", "same")
		})
	}
	wg.Wait()
	var ok []string
	for _, r := range replies {
		switch r.status {
		case http.StatusOK:
			ok = append(ok, string(r.body))
		case http.StatusConflict:
			require.Equal(t, "idempotency_key_in_flight", errorCode(t, r))
		default:
			t.Fatalf("unexpected %d %s", r.status, r.body)
		}
	}
	require.NotEmpty(t, ok)
	for _, b := range ok {
		require.Equal(t, ok[0], b, "every success is the one answer")
	}
	require.Equal(t, 1, e.traceCount(t), "stored once")
}
