package commands

import (
	"context"
	"errors"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/traces"
)

// RetentionBy is who a retention erasure records in trace.erased.v1.
const RetentionBy = "retention"

// SetRetention sets the account's retention period: its traces whose last
// activity is more than days days old are erased by the daily sweep. nil
// turns retention off. Setting it erases nothing by itself.
func (c *Commands) SetRetention(ctx context.Context, actor Actor, days *int) (Result, error) {
	if days != nil {
		if err := domain.CheckRetentionDays(*days); err != nil {
			return Result{}, err
		}
	}
	by := actor.String()
	if actor.MemberID != "" {
		by = "member:" + actor.MemberID
	}
	return c.appendAccountSetting(ctx, actor, actor.UserID, events.UserRetentionSet,
		events.UserRetentionSetV1{UserID: actor.UserID, Days: days, By: by})
}

// EraseExpiredTrace erases one of the account's traces under its retention
// period of days, through the same path as a deletion (reason "retention:
// older than N days", by "retention"). The read model nominated it at
// revision (the one whose time made it old); the trace's stream decides: a trace deleted meanwhile, or one
// that received a new revision since (new spans: it is active, not old),
// is left alone and the Result is empty. Running it twice erases once.
func (c *Commands) EraseExpiredTrace(ctx context.Context, ownerID, traceID string, revision, days int) (Result, error) {
	if err := domain.CheckRetentionDays(days); err != nil {
		return Result{}, err
	}
	res, err := c.eraseTrace(ctx, Actor{UserID: ownerID}, traceID, ErasedRetention, RetentionBy, domain.RetentionReason(days),
		func(st traces.State) bool { return st.Revision != revision })
	if nf := (*domain.NotFoundError)(nil); errors.As(err, &nf) {
		return Result{}, nil
	}
	return res, err
}
