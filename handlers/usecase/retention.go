package usecase

import (
	"context"
	"time"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/projections/readmodel"
)

// Retention is GET/PUT /retention's answer: a retention period in days
// (nil: off) and its dry-run — how many of the account's traces are older
// than it now (last activity before Cutoff) and would be erased by the
// next sweep.
type Retention struct {
	Days       *int       `json:"days"`
	WouldErase int        `json:"would_erase"`
	Cutoff     *time.Time `json:"cutoff"`
}

// GetRetention answers the account's retention period with its dry-run
// count; preview, when given, is a period to count for instead (what the
// team page shows before an admin saves it), validated as a setting is.
func (b Backend) GetRetention(ctx context.Context, caller *readmodel.Caller, preview *int) (Retention, error) {
	days := preview
	if days == nil {
		saved, err := b.Queries.Retention(ctx, caller.UserID)
		if err != nil {
			return Retention{}, err
		}
		days = saved
	} else if err := domain.CheckRetentionDays(*days); err != nil {
		return Retention{}, err
	}
	if days == nil {
		return Retention{}, nil
	}
	cutoff := domain.RetentionCutoff(time.Now(), *days)
	n, err := b.Queries.CountExpiredTraces(ctx, caller.UserID, cutoff)
	return Retention{Days: days, WouldErase: n, Cutoff: &cutoff}, err
}

// SetRetention sets (days) or turns off (nil) the account's retention
// period and answers it, with its dry-run, once the read model has it.
// Nothing is erased until the next sweep.
func (b Backend) SetRetention(ctx context.Context, caller *readmodel.Caller, days *int) (Retention, error) {
	res, err := b.Cmds.SetRetention.Handle(ctx, commands.SetRetention{Actor: Actor(caller), Days: days})
	return settled(ctx, b, res, err, func() (Retention, error) { return b.GetRetention(ctx, caller, nil) })
}
