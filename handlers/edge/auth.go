package edge

import (
	"context"
	"net/http"
	"strings"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/projections/readmodel"
)

type callerKey struct{}

// Authenticator resolves `Authorization: Bearer <key>` to an account.
type Authenticator struct{ queries *readmodel.Queries }

// NewAuthenticator returns an authenticator over the read model's keys.
func NewAuthenticator(q *readmodel.Queries) *Authenticator { return &Authenticator{queries: q} }

// Authenticate checks the request's key. An account with reward models
// disabled is answered as if the route did not exist (404), data kept.
func (a *Authenticator) Authenticate(ctx context.Context, header http.Header) (*readmodel.Caller, error) {
	h := header.Get("Authorization")
	key, ok := strings.CutPrefix(h, "Bearer ")
	if !ok || strings.TrimSpace(key) == "" {
		return nil, &domain.UnauthorizedError{Message: "missing API key: send Authorization: Bearer <key>"}
	}
	c, err := a.queries.CallerByKeyHash(ctx, commands.HashAPIKey(strings.TrimSpace(key)))
	if err != nil {
		return nil, err
	}
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

// RequireWrite refuses read-only keys (403).
func RequireWrite(c *readmodel.Caller) error {
	if c.ReadOnly {
		return &domain.ForbiddenError{Message: "this API key is read-only"}
	}
	return nil
}
