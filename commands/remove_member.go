package commands

import (
	"cmp"
	"context"
	"strings"

	"github.com/criticml/critic/domain/events"
)

// RemoveMember removes a member and revokes every key of theirs in the same
// append; their annotations stay attributed to them. The last admin cannot
// be removed (409).
type RemoveMember struct {
	AccountID string
	By        string
	MemberID  string
	Reason    string
}

// RemoveMemberHandler runs RemoveMember.
type RemoveMemberHandler struct{ *Streams }

func (c RemoveMemberHandler) Handle(ctx context.Context, cmd RemoveMember) (Result, error) {
	return retryOnConflict(func() (Result, error) {
		team, version, err := c.loadTeam(ctx, cmd.AccountID)
		if err != nil {
			return Result{}, err
		}
		removed, err := team.Remove(cmd.MemberID, cmd.By, strings.TrimSpace(cmd.Reason))
		if err != nil {
			return Result{}, err
		}
		stream := events.MembersStream(cmd.AccountID)
		expected := map[string]int64{stream: version}
		evs := []events.New{{ID: newID(), Stream: stream, OwnerID: cmd.AccountID, Type: events.MemberRemoved, Payload: removed}}
		keyStreams, err := c.store.OwnerStreams(ctx, cmd.AccountID, "api_key/", 0)
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
			owner := cmp.Or(issued.MemberID, cmd.AccountID) // keys issued before members: the implicit admin's
			if owner != cmd.MemberID || kevs[len(kevs)-1].Type == events.APIKeyRevoked {
				continue
			}
			expected[ks] = kevs[len(kevs)-1].Version
			evs = append(evs, events.New{ID: newID(), Stream: ks, OwnerID: cmd.AccountID, Type: events.APIKeyRevoked,
				Payload: events.APIKeyRevokedV1{KeyID: issued.KeyID, UserID: cmd.AccountID}})
		}
		return c.append(ctx, Actor{UserID: cmd.AccountID}, expected, evs)
	})
}
