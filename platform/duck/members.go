package duck

import (
	"context"
	"time"
)

// MemberRow is one row of the members table.
type MemberRow struct {
	ID, Name, Role string
	CreatedAt      time.Time
}

// AddMember inserts or replaces a member (keeping when they joined if the
// row exists: an account's first admin is written by user.created and
// again by member.added).
func (t *Tx) AddMember(ctx context.Context, r MemberRow) error {
	if err := t.Exec(ctx, `UPDATE main.members SET name = ?, role = ? WHERE member_id = ?`, r.Name, r.Role, r.ID); err != nil {
		return err
	}
	return t.Exec(ctx, `INSERT INTO main.members SELECT ?, ?, ?, ?, false
		WHERE NOT EXISTS (SELECT 1 FROM main.members WHERE member_id = ?)`, r.ID, r.Name, r.Role, nullTime(r.CreatedAt), r.ID)
}
