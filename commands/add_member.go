package commands

import (
	"context"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/members"
)

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
type AddMember struct {
	AccountID string
	By        string
	Name      string
	Role      members.Role
}

// AddMemberHandler runs AddMember.
type AddMemberHandler struct{ *Streams }

func (c AddMemberHandler) Handle(ctx context.Context, cmd AddMember) (AddMemberResult, error) {
	var out AddMemberResult
	_, err := retryOnConflict(func() (Result, error) {
		team, version, err := c.loadTeam(ctx, cmd.AccountID)
		if err != nil {
			return Result{}, err
		}
		memberID := newID()
		added, err := team.Add(memberID, cmd.Name, cmd.Role, cmd.By)
		if err != nil {
			return Result{}, err
		}
		key, hash := NewAPIKey()
		keyID := newID()
		stream := events.MembersStream(cmd.AccountID)
		token, invited := newInvitation(cmd.AccountID, memberID)
		r, err := c.append(ctx, Actor{UserID: cmd.AccountID}, map[string]int64{stream: version, events.APIKeyStream(keyID): 0}, []events.New{
			{ID: newID(), Stream: stream, OwnerID: cmd.AccountID, Type: events.MemberAdded, Payload: added},
			{ID: newID(), Stream: stream, OwnerID: cmd.AccountID, Type: events.MemberInvited, Payload: invited},
			{ID: newID(), Stream: events.APIKeyStream(keyID), OwnerID: cmd.AccountID, Type: events.APIKeyIssued,
				Payload: events.APIKeyIssuedV1{KeyID: keyID, UserID: cmd.AccountID, KeyHash: hash, KeyPrefix: APIKeyPrefix(key), MemberID: memberID}},
		})
		if err != nil {
			return Result{}, err
		}
		out = AddMemberResult{Result: r, Member: members.Member{ID: memberID, Name: added.Name, Role: cmd.Role}, APIKey: key, InviteToken: token}
		return r, nil
	})
	return out, err
}
