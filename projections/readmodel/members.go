package readmodel

import (
	"context"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/members"
	"github.com/criticml/critic/platform/pg"
)

// Member is a row of GET /members.
type Member struct {
	ID        string       `json:"id"`
	Name      string       `json:"name"`
	Role      members.Role `json:"role"`
	CreatedAt time.Time    `json:"created_at"`
	Removed   bool         `json:"removed"`
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

// Member reads one member of an account: another account's member is not
// found.
func (q *Queries) Member(ctx context.Context, ownerID, id string) (Member, error) {
	ms, err := q.Members(ctx, ownerID)
	if err != nil {
		return Member{}, err
	}
	if i := slices.IndexFunc(ms, func(m Member) bool { return m.ID == id }); i >= 0 {
		return ms[i], nil
	}
	return Member{}, domain.NotFound("member", id)
}

// Members lists an account's members in the order they joined, removed
// ones included (their annotations stay attributed to them).
func (q *Queries) Members(ctx context.Context, ownerID string) ([]Member, error) {
	return pg.Append(ctx, q.pool, []Member{}, func(r pgx.CollectableRow) (m Member, err error) {
		var role string
		err = r.Scan(&m.ID, &m.Name, &role, &m.CreatedAt, &m.Removed)
		m.Role, m.CreatedAt = members.Role(role), m.CreatedAt.UTC()
		return m, err
	}, `SELECT member_id::text, name, role, created_at, removed FROM rm_members
		WHERE owner_id = $1 ORDER BY created_at, member_id`, ownerID)
}
