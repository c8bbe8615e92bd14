package commands

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strings"
	"time"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/members"
)

// newInvitation makes a one-time sign-in token for a member and its event.
// The token names its account ("<account id>.<random>") so that accepting
// it, unauthenticated, reads one members stream; only its SHA-256 is stored.
func newInvitation(accountID, memberID string) (string, events.MemberInvitedV1) {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	token := accountID + "." + base64.RawURLEncoding.EncodeToString(b)
	return token, events.MemberInvitedV1{MemberID: memberID, TokenHash: HashAPIKey(token),
		ExpiresAt: time.Now().UTC().Add(members.InvitationTTL).Truncate(time.Second)}
}

// AcceptInvitationResult is who the link signed in and their fresh key,
// shown once.
type AcceptInvitationResult struct {
	Result
	AccountID string
	Team      *members.Team
	Member    members.Member
	APIKey    string
}

// AcceptInvitation spends a one-time sign-in link: it issues the member a
// fresh API key (member.invitation_accepted and api_key.issued in one
// append). A used, expired or unknown link, or one whose member was
// removed, is 410; two concurrent accepts conflict on the members stream,
// and the retry sees the link used.
type AcceptInvitation struct {
	Token string
}

// AcceptInvitationHandler runs AcceptInvitation.
type AcceptInvitationHandler struct{ *Streams }

func (c AcceptInvitationHandler) Handle(ctx context.Context, cmd AcceptInvitation) (AcceptInvitationResult, error) {
	cmd.Token = strings.TrimSpace(cmd.Token)
	if cmd.Token == "" {
		return AcceptInvitationResult{}, domain.InvalidField("token", "token is required")
	}
	accountID, _, ok := strings.Cut(cmd.Token, ".")
	if !ok || accountID == "" {
		return AcceptInvitationResult{}, members.LinkSpentError("is not valid (already used, expired or mistyped)")
	}
	hash := HashAPIKey(cmd.Token)
	var out AcceptInvitationResult
	_, err := retryOnConflict(func() (Result, error) {
		team, version, err := c.loadTeam(ctx, accountID)
		if err != nil {
			if nf := (*domain.NotFoundError)(nil); errors.As(err, &nf) {
				err = members.LinkSpentError("is not valid (already used, expired or mistyped)")
			}
			return Result{}, err
		}
		stream := events.MembersStream(accountID)
		evs, err := c.loadStream(ctx, stream)
		if err != nil {
			return Result{}, err
		}
		invs, err := members.Invitations(evs)
		if err != nil {
			return Result{}, err
		}
		keyID := newID()
		accepted, err := team.Accept(invs, hash, time.Now(), keyID)
		if err != nil {
			return Result{}, err
		}
		key, keyHash := NewAPIKey()
		r, err := c.append(ctx, Actor{UserID: accountID}, map[string]int64{stream: version, events.APIKeyStream(keyID): 0}, []events.New{
			{ID: newID(), Stream: stream, OwnerID: accountID, Type: events.MemberInvitationAccepted, Payload: accepted},
			{ID: newID(), Stream: events.APIKeyStream(keyID), OwnerID: accountID, Type: events.APIKeyIssued,
				Payload: events.APIKeyIssuedV1{KeyID: keyID, UserID: accountID, KeyHash: keyHash, KeyPrefix: APIKeyPrefix(key), MemberID: accepted.MemberID}},
		})
		if err != nil {
			return Result{}, err
		}
		m, _ := team.Member(accepted.MemberID)
		out = AcceptInvitationResult{Result: r, AccountID: accountID, Team: team, Member: m, APIKey: key}
		return r, nil
	})
	return out, err
}
