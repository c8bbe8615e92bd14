package domain

import (
	"fmt"
	"time"
)

// MaxRetentionDays bounds an account's retention period (100 years): a
// larger number is a typo, not a policy.
const MaxRetentionDays = 36500

// CheckRetentionDays says whether days is a retention period an admin may
// set: whole days, at least one (a period of 0 would erase every trace the
// moment it arrives), at most MaxRetentionDays. "Off" is the absence of a
// period, not a number.
func CheckRetentionDays(days int) error {
	if days < 1 || days > MaxRetentionDays {
		return InvalidField("days",
			fmt.Sprintf("days must be a whole number of days from 1 to %d (traces older than this are erased), or null to turn retention off; got %d", MaxRetentionDays, days))
	}
	return nil
}

// RetentionCutoff is the instant before which a trace's last activity makes
// it old under a period of days: now minus days×24h. Last activity is the
// trace's latest revision (its import, a re-import, or spans received live),
// so a trace still receiving spans is never old.
func RetentionCutoff(now time.Time, days int) time.Time {
	return now.Add(-time.Duration(days) * 24 * time.Hour).UTC()
}

// RetentionReason is the reason a retention erasure records in
// trace.erased.v1, so the log says which policy erased a trace.
func RetentionReason(days int) string {
	return fmt.Sprintf("retention: older than %d days", days)
}
