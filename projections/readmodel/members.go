package readmodel

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/members"
)

// Member is a row of GET /members.
type Member struct {
	ID        string
	Name      string
	Role      members.Role
	CreatedAt time.Time
	Removed   bool
}

// applyImplicitAdmin gives every new account its implicit admin (member id
// = account id), the member an account without member events has; a new
// account's member.added for the same member then changes nothing.
func applyImplicitAdmin(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.UserCreatedV1) error {
	return exec(ctx, tx, `INSERT INTO rm_members (owner_id, member_id, name, role, created_at) VALUES ($1, $1, $2, $3, $4)
		ON CONFLICT DO NOTHING`, p.UserID, p.Name, string(members.Admin), e.RecordedAt)
}

// The appliers of an account's members stream (listed in coreAppliers).
var (
	applyMemberAdded = on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.MemberAddedV1) error {
		return exec(ctx, tx, `INSERT INTO rm_members (owner_id, member_id, name, role, created_at) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (owner_id, member_id) DO UPDATE SET name = EXCLUDED.name, role = EXCLUDED.role`,
			e.OwnerID, p.MemberID, p.Name, p.Role, e.RecordedAt)
	})
	applyMemberRoleChanged = on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.MemberRoleChangedV1) error {
		return exec(ctx, tx, `UPDATE rm_members SET role = $3 WHERE owner_id = $1 AND member_id = $2`, e.OwnerID, p.MemberID, p.Role)
	})
	applyMemberRemoved = on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.MemberRemovedV1) error {
		return exec(ctx, tx, `UPDATE rm_members SET removed = true WHERE owner_id = $1 AND member_id = $2`, e.OwnerID, p.MemberID)
	})
)

// Members lists an account's members in the order they joined, removed
// ones included (their annotations stay attributed to them).
func (q *Queries) Members(ctx context.Context, ownerID string) ([]Member, error) {
	rows, err := q.pool.Query(ctx, `SELECT member_id::text, name, role, created_at, removed FROM rm_members
		WHERE owner_id = $1 ORDER BY created_at, member_id`, ownerID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Member{}
	for rows.Next() {
		var m Member
		var role string
		if err := rows.Scan(&m.ID, &m.Name, &role, &m.CreatedAt, &m.Removed); err != nil {
			return nil, err
		}
		m.Role, m.CreatedAt = members.Role(role), m.CreatedAt.UTC()
		out = append(out, m)
	}
	return out, rows.Err()
}
