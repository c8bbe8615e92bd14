package commands

import (
	"context"
	"strings"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/members"
)

// loadTeam folds an account's members stream over its implicit admin and
// returns the stream's version (0 when it has no events).
func (c *Commands) loadTeam(ctx context.Context, accountID string) (*members.Team, int64, error) {
	user, stream := events.UserStream(accountID), events.MembersStream(accountID)
	loaded, err := c.store.LoadStreams(ctx, []string{user, stream})
	if err != nil {
		return nil, 0, err
	}
	if len(loaded[user]) == 0 || loaded[user][0].Type != events.UserCreated {
		return nil, 0, domain.NotFound("user", accountID)
	}
	var created events.UserCreatedV1
	if err := loaded[user][0].Decode(&created); err != nil {
		return nil, 0, err
	}
	evs := loaded[stream]
	team, err := members.Fold(accountID, created.Name, evs)
	if err != nil {
		return nil, 0, err
	}
	var version int64
	if len(evs) > 0 {
		version = evs[len(evs)-1].Version
	}
	return team, version, nil
}

// Team is an account's members as its stream says now, removed members
// included: who is behind an annotation or an adjudication (critic audit
// model names them).
// It folds the team's stream because the audit reads the log, not a
// read model that may lag or be rebuilt.
func (c *Commands) Team(ctx context.Context, accountID string) (*members.Team, error) {
	team, _, err := c.loadTeam(ctx, accountID)
	return team, err
}

// AddMemberResult is the new member and their first API key, shown once.
type AddMemberResult struct {
	Result
	Member members.Member
	APIKey string
	// InviteToken is the member's one-time sign-in link token (see
	// AcceptInvitation), shown once like the key.
	InviteToken string
}

// AddMember adds a member to an account with a first API key of their own
// and a one-time sign-in link (member.added, member.invited and
// api_key.issued in one append). by is the acting member
// ("" from the CLI).
func (c *Commands) AddMember(ctx context.Context, accountID, by, name string, role members.Role) (AddMemberResult, error) {
	var out AddMemberResult
	_, err := retryOnConflict(func() (Result, error) {
		team, version, err := c.loadTeam(ctx, accountID)
		if err != nil {
			return Result{}, err
		}
		memberID := newID()
		added, err := team.Add(memberID, name, role, by)
		if err != nil {
			return Result{}, err
		}
		key, hash := NewAPIKey()
		keyID := newID()
		stream := events.MembersStream(accountID)
		token, invited := newInvitation(accountID, memberID)
		r, err := c.append(ctx, Actor{UserID: accountID}, map[string]int64{stream: version, events.APIKeyStream(keyID): 0}, []events.New{
			{ID: newID(), Stream: stream, OwnerID: accountID, Type: events.MemberAdded, Payload: added},
			{ID: newID(), Stream: stream, OwnerID: accountID, Type: events.MemberInvited, Payload: invited},
			{ID: newID(), Stream: events.APIKeyStream(keyID), OwnerID: accountID, Type: events.APIKeyIssued,
				Payload: events.APIKeyIssuedV1{KeyID: keyID, UserID: accountID, KeyHash: hash, KeyPrefix: APIKeyPrefix(key), MemberID: memberID}},
		})
		if err != nil {
			return Result{}, err
		}
		out = AddMemberResult{Result: r, Member: members.Member{ID: memberID, Name: added.Name, Role: role}, APIKey: key, InviteToken: token}
		return r, nil
	})
	return out, err
}

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
