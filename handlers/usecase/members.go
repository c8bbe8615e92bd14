package usecase

import (
	"context"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/members"
	"github.com/criticml/critic/projections/readmodel"
)

// MemberRole reads a request's role (nil: absent, which is refused).
func MemberRole(role *string) (members.Role, error) {
	if role == nil {
		return "", domain.InvalidField("role", "role is required (admin, reviewer or viewer)")
	}
	return members.ParseRole("role", *role)
}

// AddMember adds a member to the caller's account and returns them once
// readable, with the command's result: their first API key and sign-in
// link token, shown once.
func (b Backend) AddMember(ctx context.Context, caller *readmodel.Caller, name string, role members.Role) (readmodel.Member, commands.AddMemberResult, error) {
	res, err := b.Cmds.AddMember.Handle(ctx, commands.AddMember{AccountID: caller.UserID, By: caller.MemberID, Name: name, Role: role})
	m, err := settled(ctx, b, res.Result, err, func() (readmodel.Member, error) { return b.Queries.Member(ctx, caller.UserID, res.Member.ID) })
	return m, res, err
}

// ChangeMemberRole gives a member of the caller's account another role and
// returns them once readable; another account's member is not found.
func (b Backend) ChangeMemberRole(ctx context.Context, caller *readmodel.Caller, id string, role members.Role) (readmodel.Member, error) {
	if _, err := b.Queries.Member(ctx, caller.UserID, id); err != nil {
		return readmodel.Member{}, err
	}
	res, err := b.Cmds.ChangeMemberRole.Handle(ctx, commands.ChangeMemberRole{AccountID: caller.UserID, By: caller.MemberID, MemberID: id, Role: role})
	return settled(ctx, b, res, err, func() (readmodel.Member, error) { return b.Queries.Member(ctx, caller.UserID, id) })
}

// RemoveMember removes a member of the caller's account (their keys are
// revoked, their annotations stay theirs) and returns once the read model
// shows it; another account's member is not found.
func (b Backend) RemoveMember(ctx context.Context, caller *readmodel.Caller, id, reason string) error {
	if _, err := b.Queries.Member(ctx, caller.UserID, id); err != nil {
		return err
	}
	res, err := b.Cmds.RemoveMember.Handle(ctx, commands.RemoveMember{AccountID: caller.UserID, By: caller.MemberID, MemberID: id, Reason: reason})
	return b.applied(ctx, res, err)
}
