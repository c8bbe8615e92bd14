package agreement

import (
	"fmt"

	"github.com/criticml/critic/domain"
)

// Assignment with overlap (issue 36): an account's admin sets how many
// members should judge each review queue item, so agreement has co-rated
// targets to measure while N reviewers still cover N/overlap times as much
// as one. The review queue offers a member an item while fewer than
// overlap members have judged it (a live rating not flagged as a label
// error) and this member is not one of them.
const (
	DefaultOverlap = 1
	MaxOverlap     = 10
)

// NeedsJudgment is the queue's rule for one item: judgedBy are the members
// who judged it.
func NeedsJudgment(judgedBy []string, member string, overlap int) bool {
	distinct := map[string]bool{}
	for _, m := range judgedBy {
		if m == member {
			return false
		}
		distinct[m] = true
	}
	return len(distinct) < overlap
}

// CheckOverlap refuses an overlap outside 1..MaxOverlap.
func CheckOverlap(n int) error {
	if n < 1 || n > MaxOverlap {
		return &domain.ValidationError{Code: "invalid_request", Field: "overlap",
			Message: fmt.Sprintf("overlap must be 1–%d (how many members judge each queue item), not %d", MaxOverlap, n)}
	}
	return nil
}
