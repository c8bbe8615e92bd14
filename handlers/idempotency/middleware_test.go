package idempotency_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain/members"
	"github.com/criticml/critic/handlers/edge"
	"github.com/criticml/critic/handlers/idempotency"
	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/platform/eventstore"
	"github.com/criticml/critic/platform/pg/pgtest"
	"github.com/criticml/critic/projections/readmodel"
)

// TestServerErrorsFreeTheKeyOnlyWhenNothingWasStored: a 5xx from a request
// that appended nothing frees its key (the retry runs the request again); a
// 5xx from one that stored a write is kept and replayed (a retry must not
// write twice); a handler that panics frees the key too.
func TestServerErrorsFreeTheKeyOnlyWhenNothingWasStored(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	blobs, err := blob.NewLocal(t.TempDir())
	require.NoError(t, err)
	store := eventstore.New(pool, blobs)
	cmds := commands.New(store)
	u, err := cmds.CreateUser.Handle(ctx, commands.CreateUser{Name: "idem"})
	require.NoError(t, err)
	all, err := store.ReadAfter(ctx, 0, 100)
	require.NoError(t, err)
	log := slog.New(slog.DiscardHandler)
	require.NoError(t, readmodel.New(pool, blobs, log).Apply(ctx, all))
	auth := edge.NewAuthenticator(readmodel.NewQueries(pool))

	var runs atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("POST /fails", func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		http.Error(w, "boom", http.StatusInternalServerError)
	})
	mux.HandleFunc("POST /stores-then-fails", func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		_, err := cmds.ImportTraces.Handle(r.Context(), commands.ImportTraces{Actor: commands.Actor{UserID: u.UserID}, Input: commands.ImportTracesInput{Format: "stash",
			Data: []byte(`{"steps":[{"role":"user","content":"q"}]}`)}})
		require.NoError(t, err)
		http.Error(w, "stored, then lost", http.StatusServiceUnavailable)
	})
	mux.HandleFunc("POST /panics", func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		panic(http.ErrAbortHandler)
	})
	srv := httptest.NewServer(edge.Observe(idempotency.New(idempotency.NewStore(pool, 0, 0), auth, 1<<20, log).Wrap(mux), edge.Observing{}))
	defer srv.Close()
	post := func(path, key string) (int, string) {
		req, err := http.NewRequest("POST", srv.URL+path, strings.NewReader("{}"))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+u.APIKey)
		req.Header.Set("Idempotency-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	events := func() int {
		var n int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM events`).Scan(&n))
		return n
	}

	status, _ := post("/fails", "a")
	require.Equal(t, http.StatusInternalServerError, status)
	status, _ = post("/fails", "a")
	require.Equal(t, http.StatusInternalServerError, status)
	require.EqualValues(t, 2, runs.Load(), "nothing was stored: the retry ran again")

	runs.Store(0)
	before := events()
	status, body := post("/stores-then-fails", "b")
	require.Equal(t, http.StatusServiceUnavailable, status)
	stored := events()
	require.Greater(t, stored, before)
	status2, body2 := post("/stores-then-fails", "b")
	require.Equal(t, status, status2)
	require.Equal(t, body, body2)
	require.EqualValues(t, 1, runs.Load(), "the write was stored: the retry is answered, not run")
	require.Equal(t, stored, events())

	runs.Store(0)
	post("/panics", "c")
	post("/panics", "c")
	// Go's transport itself resends a request carrying an Idempotency-Key
	// whose connection broke, so each post may run more than once: each
	// run found the key free.
	require.GreaterOrEqual(t, runs.Load(), int32(2), "a panicked attempt frees its key")
	var left int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM idempotency_keys WHERE key IN ('a', 'c')`).Scan(&left))
	require.Zero(t, left, "freed keys leave no row")
}

// TestReplayNeedsTheSameAPIKey: the stored answer of a full key's write is
// replayed to that key only. Another key of the same account, a read-only
// one in particular, sending the same Idempotency-Key and body is told the
// key was used for another request, and the handler does not run for it.
func TestReplayNeedsTheSameAPIKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	blobs, err := blob.NewLocal(t.TempDir())
	require.NoError(t, err)
	store := eventstore.New(pool, blobs)
	cmds := commands.New(store)
	u, err := cmds.CreateUser.Handle(ctx, commands.CreateUser{Name: "idem-keys"})
	require.NoError(t, err)
	ro, err := cmds.IssueAPIKey.Handle(ctx, commands.IssueAPIKey{UserID: u.UserID, ReadOnly: true})
	require.NoError(t, err)
	all, err := store.ReadAfter(ctx, 0, 100)
	require.NoError(t, err)
	log := slog.New(slog.DiscardHandler)
	require.NoError(t, readmodel.New(pool, blobs, log).Apply(ctx, all))
	auth := edge.NewAuthenticator(readmodel.NewQueries(pool))

	var runs atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("POST /writes", func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		// The middleware authenticated the request once and hands the
		// caller on: the handler's Authenticate looks nothing up again.
		passed := edge.CallerFrom(r.Context())
		require.NotNil(t, passed, "the idempotency middleware passes its caller on")
		c, err := auth.Authenticate(r.Context(), r.Header)
		require.NoError(t, err)
		require.Same(t, passed, c)
		if err := edge.Permit(c, members.Ingest); err != nil {
			edge.WriteError(w, err)
			return
		}
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"id":"created-by-the-full-key"}`)
	})
	srv := httptest.NewServer(edge.Observe(idempotency.New(idempotency.NewStore(pool, 0, 0), auth, 1<<20, log).Wrap(mux), edge.Observing{}))
	defer srv.Close()
	post := func(apiKey string) (int, string) {
		req, err := http.NewRequest("POST", srv.URL+"/writes", strings.NewReader(`{"name":"x"}`))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+apiKey)
		req.Header.Set("Idempotency-Key", "shared")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	status, body := post(u.APIKey)
	require.Equal(t, http.StatusCreated, status, body)
	status, body = post(ro.APIKey)
	require.Equal(t, http.StatusUnprocessableEntity, status, body)
	require.Contains(t, body, "idempotency_key_reused")
	require.NotContains(t, body, "created-by-the-full-key")
	require.EqualValues(t, 1, runs.Load())
	// The key that made the write still gets its answer back.
	status, body = post(u.APIKey)
	require.Equal(t, http.StatusCreated, status)
	require.Contains(t, body, "created-by-the-full-key")
	require.EqualValues(t, 1, runs.Load())
}
