package edge

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/projections/readmodel"
)

type callerKey struct{}

// Authenticator resolves `Authorization: Bearer <key>` to an account.
//
// It never caches a lookup: every request asks Postgres, whose answer
// includes the key's revocation in the event log, so a revoked key gets 401
// on the next request on every instance. What it remembers is only when it
// last recorded each key's use, so "last used" costs one write per key and
// minute, not one per request.
type Authenticator struct {
	queries *readmodel.Queries

	mu       sync.Mutex
	recorded map[string]time.Time // key id → when this instance last wrote its use
}

// keyUseEvery is how often one instance records a key's last use.
const keyUseEvery = time.Minute

// NewAuthenticator returns an authenticator over the read model's keys.
func NewAuthenticator(q *readmodel.Queries) *Authenticator {
	return &Authenticator{queries: q, recorded: map[string]time.Time{}}
}

// noteUse records the key's use when this instance has not for a minute. A
// failed write is logged, not fatal: telemetry never refuses a request.
func (a *Authenticator) noteUse(ctx context.Context, keyID string) {
	now := time.Now()
	a.mu.Lock()
	due := now.Sub(a.recorded[keyID]) >= keyUseEvery
	if due {
		a.recorded[keyID] = now
	}
	a.mu.Unlock()
	if !due {
		return
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if err := a.queries.RecordKeyUse(wctx, keyID, now); err != nil {
		slog.Warn("recording an API key's last use", "key_id", keyID, "err", err)
	}
}

// Authenticate checks the request's key. An account with reward models
// disabled is answered as if the route did not exist (404), data kept. A
// request already authenticated on its way in (the idempotency middleware
// must know the account before the handler runs) carries its caller in
// ctx, and is not looked up again.
func (a *Authenticator) Authenticate(ctx context.Context, header http.Header) (*readmodel.Caller, error) {
	if c := CallerFrom(ctx); c != nil {
		return c, nil
	}
	h := header.Get("Authorization")
	key, ok := strings.CutPrefix(h, "Bearer ")
	if !ok || strings.TrimSpace(key) == "" {
		return nil, &domain.UnauthorizedError{Message: "missing API key: send Authorization: Bearer <key>"}
	}
	c, err := a.queries.CallerByKeyHash(ctx, commands.HashAPIKey(strings.TrimSpace(key)))
	if err != nil {
		return nil, err
	}
	a.noteUse(ctx, c.KeyID)
	if !c.RewardModelsEnabled {
		return nil, &domain.NotFoundError{What: "route"}
	}
	return c, nil
}

// Middleware authenticates every request and stores the caller in its context.
func (a *Authenticator) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := a.Authenticate(r.Context(), r.Header)
		if err != nil {
			WriteError(w, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(WithCaller(r.Context(), c)))
	})
}

// WithCaller stores the caller in ctx.
func WithCaller(ctx context.Context, c *readmodel.Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the authenticated caller.
func CallerFrom(ctx context.Context) *readmodel.Caller {
	c, _ := ctx.Value(callerKey{}).(*readmodel.Caller)
	return c
}
