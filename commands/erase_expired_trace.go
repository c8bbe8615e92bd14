package commands

import (
	"context"
	"errors"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/traces"
)

// EraseExpiredTrace erases one of the account's traces under its retention
// period of days, through the same path as a deletion (reason "retention:
// older than N days", by "retention"). The read model nominated it at
// revision (the one whose time made it old); the trace's stream decides: a trace deleted meanwhile, or one
// that received a new revision since (new spans: it is active, not old),
// is left alone and the Result is empty. Running it twice erases once.
type EraseExpiredTrace struct {
	OwnerID  string
	TraceID  string
	Revision int
	Days     int
}

// EraseExpiredTraceHandler runs EraseExpiredTrace.
type EraseExpiredTraceHandler struct{ *Streams }

func (c EraseExpiredTraceHandler) Handle(ctx context.Context, cmd EraseExpiredTrace) (Result, error) {
	if err := domain.CheckRetentionDays(cmd.Days); err != nil {
		return Result{}, err
	}
	res, err := c.eraseTrace(ctx, Actor{UserID: cmd.OwnerID}, cmd.TraceID, ErasedRetention, RetentionBy, domain.RetentionReason(cmd.Days),
		func(st traces.State) bool { return st.Revision != cmd.Revision })
	if nf := (*domain.NotFoundError)(nil); errors.As(err, &nf) {
		return Result{}, nil
	}
	return res, err
}
