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
