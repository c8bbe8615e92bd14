package snapshot

import (
	"context"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/members"
	"github.com/criticml/critic/platform/duck"
)

// The members table (issue 36): user.created writes the account's implicit
// admin (id and name the account's), the members stream adds, re-roles and
// removes members, so an account from before members reads as its one
// admin, as in the read model.
var (
	addAdmin = touchAllOn(func(ctx context.Context, tx *duck.Tx, e events.Envelope, p events.UserCreatedV1) error {
		return tx.AddMember(ctx, duck.MemberRow{ID: p.UserID, Name: p.Name, Role: string(members.Admin), CreatedAt: e.RecordedAt})
	})
	addMember = touchAllOn(func(ctx context.Context, tx *duck.Tx, e events.Envelope, p events.MemberAddedV1) error {
		return tx.AddMember(ctx, duck.MemberRow{ID: p.MemberID, Name: p.Name, Role: p.Role, CreatedAt: e.RecordedAt})
	})
	changeMemberRole = touchAllOn(func(ctx context.Context, tx *duck.Tx, e events.Envelope, p events.MemberRoleChangedV1) error {
		return tx.Exec(ctx, `UPDATE main.members SET role = ? WHERE member_id = ?`, p.Role, p.MemberID)
	})
	removeMember = touchAllOn(func(ctx context.Context, tx *duck.Tx, e events.Envelope, p events.MemberRemovedV1) error {
		return tx.Exec(ctx, `UPDATE main.members SET removed = true WHERE member_id = ?`, p.MemberID)
	})
)
