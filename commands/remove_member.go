package commands

import (
	"context"
	"strings"

	"github.com/criticml/critic/domain/events"
)

// RemoveMember removes a member and revokes every key of theirs in the same
// append; their annotations stay attributed to them. The last admin cannot
// be removed (409).
func (c *Commands) RemoveMember(ctx context.Context, accountID, by, memberID, reason string) (Result, error) {
	return retryOnConflict(func() (Result, error) {
		team, version, err := c.loadTeam(ctx, accountID)
		if err != nil {
			return Result{}, err
		}
		removed, err := team.Remove(memberID, by, strings.TrimSpace(reason))
		if err != nil {
			return Result{}, err
		}
		stream := events.MembersStream(accountID)
		expected := map[string]int64{stream: version}
		evs := []events.New{{ID: newID(), Stream: stream, OwnerID: accountID, Type: events.MemberRemoved, Payload: removed}}
		keyStreams, err := c.store.OwnerStreams(ctx, accountID, "api_key/", 0)
		if err != nil {
			return Result{}, err
		}
		loaded, err := c.store.LoadStreams(ctx, keyStreams)
		if err != nil {
			return Result{}, err
		}
		for _, ks := range keyStreams {
			kevs := loaded[ks]
			if len(kevs) == 0 || kevs[0].Type != events.APIKeyIssued {
				continue
			}
			var issued events.APIKeyIssuedV1
			if err := kevs[0].Decode(&issued); err != nil {
				return Result{}, err
			}
			owner := issued.MemberID
			if owner == "" {
				owner = accountID // keys issued before members: the implicit admin's
			}
			if owner != memberID || kevs[len(kevs)-1].Type == events.APIKeyRevoked {
				continue
			}
			expected[ks] = kevs[len(kevs)-1].Version
			evs = append(evs, events.New{ID: newID(), Stream: ks, OwnerID: accountID, Type: events.APIKeyRevoked,
				Payload: events.APIKeyRevokedV1{KeyID: issued.KeyID, UserID: accountID}})
		}
		return c.append(ctx, Actor{UserID: accountID}, expected, evs)
	})
}
