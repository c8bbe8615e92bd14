package commands

import (
	"context"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/members"
)

// ChangeMemberRole gives a member another role; the last admin cannot be
// demoted (409).
type ChangeMemberRole struct {
	AccountID string
	By        string
	MemberID  string
	Role      members.Role
}

// ChangeMemberRoleHandler runs ChangeMemberRole.
type ChangeMemberRoleHandler struct{ *Streams }

func (c ChangeMemberRoleHandler) Handle(ctx context.Context, cmd ChangeMemberRole) (Result, error) {
	return retryOnConflict(func() (Result, error) {
		team, version, err := c.loadTeam(ctx, cmd.AccountID)
		if err != nil {
			return Result{}, err
		}
		changed, err := team.ChangeRole(cmd.MemberID, cmd.Role, cmd.By)
		if err != nil {
			return Result{}, err
		}
		return c.appendEvent(ctx, Actor{UserID: cmd.AccountID}, events.MembersStream(cmd.AccountID), cmd.AccountID, version, events.MemberRoleChanged, changed)
	})
}
