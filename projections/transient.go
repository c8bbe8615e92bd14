package projections

import (
	"context"
	"errors"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/criticml/critic/domain"
)

// transient reports whether err is an outage or a race that passes by itself
// — a connection that dropped or timed out, a database that is restarting
// or overloaded, a concurrent writer that won a version check, a dependency
// that says it is unavailable — rather than something wrong with the event.
//
// The guard parks only events that fail for a reason of their own: parking
// holds the owner's later events until an operator acts, so a dispatcher
// that could not publish to Kafka for two seconds must not stop an account's
// training for good. A transient failure fails the batch instead, and the bus
// redelivers it with backoff until the outage ends.
func transient(err error) bool {
	if err == nil {
		return false
	}
	var unavailable *domain.UnavailableError
	var conflict *domain.VersionConflictError
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &unavailable) || errors.As(err, &conflict) {
		return true
	}
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok {
		switch pgErr.Code {
		case "40001", "40P01", "55P03": // serialization failure, deadlock, lock not available
			return true
		}
		class := pgErr.Code[:min(2, len(pgErr.Code))]
		// connection exception, insufficient resources, and the server shutting
		// down or refusing connections (57P0x; not 57014, a statement timeout,
		// which the same event would hit again)
		return class == "08" || class == "53" || strings.HasPrefix(pgErr.Code, "57P")
	}
	if pgconn.Timeout(err) || pgconn.SafeToRetry(err) {
		return true
	}
	if _, ok := errors.AsType[net.Error](err); ok {
		return true
	}
	// Kafka clients' errors say for themselves whether a retry may succeed.
	var temporary interface{ Temporary() bool }
	if errors.As(err, &temporary) && temporary.Temporary() {
		return true
	}
	var timeout interface{ Timeout() bool }
	return errors.As(err, &timeout) && timeout.Timeout()
}
