package snapshot

import (
	"context"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/members"
	"github.com/criticml/critic/platform/duck"
)

// applyMember keeps the members table (issue 36): user.created writes the
// account's implicit admin (id and name the account's), the members stream
// adds, re-roles and removes members, so an account from before members
// reads as its one admin, as in the read model.
func applyMember(ctx context.Context, tx *duck.Tx, e events.Envelope) error {
	switch e.Type {
	case events.UserCreated:
		var p events.UserCreatedV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		return tx.AddMember(ctx, duck.MemberRow{ID: p.UserID, Name: p.Name, Role: string(members.Admin), CreatedAt: e.RecordedAt})
	case events.MemberAdded:
		var p events.MemberAddedV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		return tx.AddMember(ctx, duck.MemberRow{ID: p.MemberID, Name: p.Name, Role: p.Role, CreatedAt: e.RecordedAt})
	case events.MemberRoleChanged:
		var p events.MemberRoleChangedV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		return tx.Exec(ctx, `UPDATE main.members SET role = ? WHERE member_id = ?`, p.Role, p.MemberID)
	case events.MemberRemoved:
		var p events.MemberRemovedV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		return tx.Exec(ctx, `UPDATE main.members SET removed = true WHERE member_id = ?`, p.MemberID)
	}
	return nil
}
