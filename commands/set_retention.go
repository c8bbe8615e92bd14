package commands

import (
	"context"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
)

// RetentionBy is who a retention erasure records in trace.erased.v1.
const RetentionBy = "retention"

// SetRetention sets the account's retention period: its traces whose last
// activity is more than days days old are erased by the daily sweep. nil
// turns retention off. Setting it erases nothing by itself.
type SetRetention struct {
	Actor Actor
	Days  *int
}

// SetRetentionHandler runs SetRetention.
type SetRetentionHandler struct{ *Streams }

func (c SetRetentionHandler) Handle(ctx context.Context, cmd SetRetention) (Result, error) {
	if cmd.Days != nil {
		if err := domain.CheckRetentionDays(*cmd.Days); err != nil {
			return Result{}, err
		}
	}
	by := cmd.Actor.String()
	if cmd.Actor.MemberID != "" {
		by = "member:" + cmd.Actor.MemberID
	}
	return c.appendAccountSetting(ctx, cmd.Actor, cmd.Actor.UserID, events.UserRetentionSet,
		events.UserRetentionSetV1{UserID: cmd.Actor.UserID, Days: cmd.Days, By: by})
}
