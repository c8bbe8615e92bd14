package commands

import (
	"context"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/members"
)

// ChangeMemberRole gives a member another role; the last admin cannot be
// demoted (409).
func (c *Commands) ChangeMemberRole(ctx context.Context, accountID, by, memberID string, role members.Role) (Result, error) {
	return retryOnConflict(func() (Result, error) {
		team, version, err := c.loadTeam(ctx, accountID)
		if err != nil {
			return Result{}, err
		}
		changed, err := team.ChangeRole(memberID, role, by)
		if err != nil {
			return Result{}, err
		}
		stream := events.MembersStream(accountID)
		return c.append(ctx, Actor{UserID: accountID}, map[string]int64{stream: version}, []events.New{
			{ID: newID(), Stream: stream, OwnerID: accountID, Type: events.MemberRoleChanged, Payload: changed}})
	})
}
