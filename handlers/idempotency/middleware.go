package idempotency

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"strings"
	"time"

	"connectrpc.com/connect"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/handlers/edge"
	"github.com/criticml/critic/platform/requestid"
)

// Header is the request header carrying the key.
const Header = "Idempotency-Key"

// ReplayedHeader marks an answer replayed from a stored one.
const ReplayedHeader = "Idempotent-Replayed"

// MaxKeyLen bounds a key (a UUID is 36).
const MaxKeyLen = 255

// MaxStoredBody bounds an answer kept for replay; a larger one (a big query
// result, never a write's answer) is not kept, and its key is freed.
const MaxStoredBody = 16 << 20

// Middleware applies Idempotency-Key to every write (POST, PATCH, PUT,
// DELETE) of the handler it wraps.
type Middleware struct {
	store   *Store
	auth    *edge.Authenticator
	maxBody int64
	log     *slog.Logger
	cerr    *connect.ErrorWriter
}

// New returns the middleware. maxBody is the API's request limit: a larger
// body is left to the handler to refuse.
func New(store *Store, auth *edge.Authenticator, maxBody int64, log *slog.Logger) *Middleware {
	if log == nil {
		log = slog.Default()
	}
	return &Middleware{store: store, auth: auth, maxBody: maxBody, log: log, cerr: connect.NewErrorWriter()}
}

// Wrap returns next behind the middleware. Requests that are not writes,
// carry no key, or do not authenticate as an account (the handler answers
// those) pass straight through.
func (m *Middleware) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, has := r.Header[Header]
		if !writes[r.Method] || !has {
			next.ServeHTTP(w, r)
			return
		}
		caller, err := m.auth.Authenticate(r.Context(), r.Header)
		if err != nil {
			next.ServeHTTP(w, r) // the handler answers 401/404 as always
			return
		}
		key, err := parseKey(raw)
		if err != nil {
			m.fail(w, r, err)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, m.maxBody+1))
		if err != nil {
			m.fail(w, r, domain.Invalid("could not read the request body: %v", err))
			return
		}
		if int64(len(body)) > m.maxBody {
			r.Body = readCloser{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
			next.ServeHTTP(w, r) // the handler answers 413
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r = r.WithContext(edge.WithCaller(r.Context(), caller)) // the handler authenticates no second time
		m.serve(w, r, next, caller.UserID, key, fingerprint(r, caller.KeyID, body))
	})
}

// writes are the methods a key applies to. A PATCH, PUT or DELETE is not
// always idempotent by itself (a PATCH that toggles, a DELETE whose retry
// would answer 404 after the first removed the thing), and a client retrying
// a lost answer needs the first answer back as much as for a POST. GET, HEAD
// and OPTIONS change nothing: their keys are ignored.
var writes = map[string]bool{http.MethodPost: true, http.MethodPatch: true, http.MethodPut: true, http.MethodDelete: true}

type readCloser struct {
	io.Reader
	io.Closer
}

// parseKey accepts the draft's structured-field string ("…") and the bare
// token most clients send.
func parseKey(values []string) (string, error) {
	if len(values) != 1 {
		return "", &domain.ValidationError{Code: "invalid_idempotency_key", Field: Header, Message: "send one Idempotency-Key header"}
	}
	k := strings.TrimSpace(values[0])
	if len(k) >= 2 && k[0] == '"' && k[len(k)-1] == '"' {
		k = k[1 : len(k)-1]
	}
	// A byte outside visible ASCII is a rune outside it (RuneError included).
	if k == "" || len(k) > MaxKeyLen || strings.ContainsFunc(k, func(r rune) bool { return r < 0x21 || r > 0x7e }) {
		return "", &domain.ValidationError{Code: "invalid_idempotency_key", Field: Header,
			Message: "Idempotency-Key must be 1 to 255 visible ASCII characters (a UUID, for example)"}
	}
	return k, nil
}

// fingerprint is what makes two requests "the same": the API key that sent
// it, method, path, query, how the body is encoded, and the body. Keys are
// scoped to the account, so the API key is part of it: another key of the
// same account (a read-only one above all) must not receive the stored answer
// of a write it could not have made.
func fingerprint(r *http.Request, apiKeyID string, body []byte) []byte {
	h := sha256.New()
	for _, s := range []string{apiKeyID, r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Content-Type"), r.Header.Get("Content-Encoding")} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	h.Write(body)
	return h.Sum(nil)
}

func (m *Middleware) serve(w http.ResponseWriter, r *http.Request, next http.Handler, owner, key string, fp []byte) {
	ctx := r.Context()
	rid := requestid.From(ctx)
	if rid == "" {
		rid = requestid.New()
	}
	for range 3 {
		a, claimed, rec, err := m.store.begin(ctx, owner, key, fp, r.Method, r.URL.Path, rid)
		if errors.Is(err, errVanished) {
			continue
		}
		if err != nil {
			m.fail(w, r, err)
			return
		}
		if !claimed {
			if !bytes.Equal(rec.fingerprint, fp) {
				m.fail(w, r, &domain.ValidationError{Code: "idempotency_key_reused", Field: Header,
					Message: "this Idempotency-Key was already used for a different request (" + rec.method + " " + rec.path +
						", a different body or another API key); use a new key for a new request"})
				return
			}
			switch {
			case rec.state == "done":
				replay(w, rec.resp)
				return
			case rec.leaseLive:
				m.inFlight(w, r)
				return
			}
			// The first attempt's instance stopped mid-request.
			stored, err := m.store.appended(ctx, owner, rec.requestID, rec.startSeq)
			if err != nil {
				m.fail(w, r, err)
				return
			}
			if stored {
				m.fail(w, r, &domain.ConflictError{Code: "idempotent_request_interrupted",
					Message: "the first request with this Idempotency-Key stored its write, but the instance answering it stopped before it could answer; " +
						"the write stands: read the resource instead of retrying (request id " + rec.requestID + ")"})
				return
			}
			var ok bool
			if a, ok, err = m.store.takeOver(ctx, owner, key, rec.requestID, rid); err != nil {
				m.fail(w, r, err)
				return
			} else if !ok {
				continue // someone else took it over: look again
			}
		}
		m.run(w, r, next, a)
		return
	}
	m.inFlight(w, r)
}

// inFlight answers that another request still holds the key: 409, retry
// after a second.
func (m *Middleware) inFlight(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Retry-After", "1")
	m.fail(w, r, &domain.ConflictError{Code: "idempotency_key_in_flight",
		Message: "a request with this Idempotency-Key is still being processed; retry shortly"})
}

// run executes the request holding the key, renewing its lease while it
// runs, and stores the answer. A 5xx that stored nothing frees the key (a
// retry runs again: nothing happened); any other answer is kept.
func (m *Middleware) run(w http.ResponseWriter, r *http.Request, next http.Handler, a attempt) {
	rec := &recorder{ResponseWriter: w}
	renewCtx, stopRenew := context.WithCancel(context.WithoutCancel(r.Context()))
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		t := time.NewTicker(m.store.lease / 3)
		defer t.Stop()
		for {
			select {
			case <-renewCtx.Done():
				return
			case <-t.C:
				if err := m.store.renew(renewCtx, a); err != nil && renewCtx.Err() == nil {
					m.log.WarnContext(r.Context(), "idempotency: renewing a key's lease", "err", err)
				}
			}
		}
	}()
	completed := false
	defer func() {
		stopRenew()
		<-renewed
		if !completed {
			// The handler panicked: nothing to replay; free the key
			// unless it stored something.
			m.settle(r, a, nil)
		}
	}()
	next.ServeHTTP(rec, r.WithContext(requestid.With(r.Context(), a.requestID)))
	completed = true
	m.settle(r, a, rec)
}

// settle stores (or frees) the key after the attempt ended.
func (m *Middleware) settle(r *http.Request, a attempt, rec *recorder) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 10*time.Second)
	defer cancel()
	keep := rec != nil && !rec.tooBig && rec.status() < 500
	if rec != nil && !rec.tooBig && !keep {
		// A 5xx: keep it when the attempt stored a write (a retry must not
		// write twice), free the key when it stored nothing.
		stored, err := m.store.appended(ctx, a.owner, a.requestID, a.startSeq)
		keep = err != nil || stored
	}
	var err error
	if keep {
		err = m.store.complete(ctx, a, rec.response())
	} else {
		err = m.store.release(ctx, a)
	}
	if err != nil {
		m.log.ErrorContext(r.Context(), "idempotency: storing the answer of a keyed request; a retry will be told the outcome is unknown", "err", err)
	}
}

// fail answers err in the protocol of the request: Connect/gRPC calls as a
// Connect error, everything else as the REST error body.
func (m *Middleware) fail(w http.ResponseWriter, r *http.Request, err error) {
	if !strings.HasPrefix(r.URL.Path, "/api/") && m.cerr.IsSupported(r) {
		_ = m.cerr.Write(w, r, edge.ConnectErrorContext(r.Context(), err))
		return
	}
	edge.WriteError(w, err)
}

// replay writes a stored answer.
func replay(w http.ResponseWriter, resp response) {
	h := w.Header()
	maps.Copy(h, resp.Header)
	h.Set(ReplayedHeader, "true")
	w.WriteHeader(resp.Status)
	_, _ = w.Write(resp.Body)
	for k, v := range resp.Trailer {
		h[http.TrailerPrefix+k] = v
	}
}

// recorder passes the answer through and keeps a copy.
type recorder struct {
	http.ResponseWriter
	code   int
	header http.Header
	body   bytes.Buffer
	tooBig bool
}

// notReplayed are headers that belong to one answer, not to the result.
var notReplayed = map[string]bool{"Date": true, "Content-Length": true, requestid.Header: true, "Trailer": true, "Set-Cookie": true}

func (c *recorder) WriteHeader(code int) {
	if c.code == 0 {
		c.code = code
		c.header = http.Header{}
		for k, v := range c.ResponseWriter.Header() {
			if !notReplayed[k] && !strings.HasPrefix(k, http.TrailerPrefix) {
				c.header[k] = append([]string(nil), v...)
			}
		}
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *recorder) Write(b []byte) (int, error) {
	if c.code == 0 {
		c.WriteHeader(http.StatusOK)
	}
	if !c.tooBig {
		if c.body.Len()+len(b) > MaxStoredBody {
			c.tooBig = true
			c.body = bytes.Buffer{}
		} else {
			c.body.Write(b)
		}
	}
	return c.ResponseWriter.Write(b)
}

func (c *recorder) Flush() {
	if c.code == 0 {
		c.WriteHeader(http.StatusOK)
	}
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (c *recorder) Unwrap() http.ResponseWriter { return c.ResponseWriter }

func (c *recorder) status() int {
	if c.code == 0 {
		return http.StatusOK
	}
	return c.code
}

// response is what was answered, trailers included (set after the body
// with http.TrailerPrefix or declared in a Trailer header, as gRPC does).
func (c *recorder) response() response {
	resp := response{Status: c.status(), Header: c.header, Body: c.body.Bytes()}
	if resp.Header == nil {
		resp.Header = http.Header{}
	}
	declared := map[string]bool{}
	for _, v := range c.ResponseWriter.Header().Values("Trailer") {
		for k := range strings.SplitSeq(v, ",") {
			if k = strings.TrimSpace(k); k != "" {
				declared[http.CanonicalHeaderKey(k)] = true
			}
		}
	}
	for k, v := range c.ResponseWriter.Header() {
		name, isPrefixed := strings.CutPrefix(k, http.TrailerPrefix)
		if isPrefixed || declared[k] {
			if resp.Trailer == nil {
				resp.Trailer = http.Header{}
			}
			resp.Trailer[http.CanonicalHeaderKey(name)] = append([]string(nil), v...)
			delete(resp.Header, k)
		}
	}
	return resp
}
