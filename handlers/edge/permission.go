package edge

import (
	"fmt"
	"net/http"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/members"
	"github.com/criticml/critic/projections/readmodel"
)

// Permit is the one check of what a caller may do (issue 36): the key's
// member's role must grant p (domain/members), and a read-only key may only
// read and query whatever its member's role — nothing it can do writes. A
// refusal is 403 "forbidden" naming the permission and the role. Every REST
// route (Require), Connect method (the connectapi interceptor) and the OTLP
// receivers ask it; no handler checks a role itself.
func Permit(c *readmodel.Caller, p members.Permission) error {
	if c == nil {
		return &domain.UnauthorizedError{Message: "missing API key: send Authorization: Bearer <key>"}
	}
	if c.ReadOnly && p != members.Read && p != members.Query {
		return &domain.ForbiddenError{Message: fmt.Sprintf("this API key is read-only: it may not %s (permission %q, role %s)", p, p, c.Role)}
	}
	return c.Role.Check(p)
}

// Require answers 403 before next runs unless the authenticated caller
// (Authenticator.Middleware runs first) has permission p: the route's body
// is never read for a caller who may not send it.
func Require(p members.Permission, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := Permit(CallerFrom(r.Context()), p); err != nil {
			WriteError(w, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}
