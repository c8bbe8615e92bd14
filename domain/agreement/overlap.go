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
// error) and this member is not one of them. The review queue's queries
// state the rule, in SQL (projections/readmodel's needsJudgment): one
// statement of it, tested through the queue.
const (
	DefaultOverlap = 1
	MaxOverlap     = 10
)

// CheckOverlap refuses an overlap outside 1..MaxOverlap.
func CheckOverlap(n int) error {
	if n < 1 || n > MaxOverlap {
		return domain.InvalidField("overlap",
			fmt.Sprintf("overlap must be 1–%d (how many members judge each queue item), not %d", MaxOverlap, n))
	}
	return nil
}
