package members

import (
	"time"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
)

// InvitationTTL is how long a one-time sign-in link stays valid: long
// enough to hand over, short enough that one found in an old chat log is
// dead.
const InvitationTTL = 7 * 24 * time.Hour

// Invitation is one one-time sign-in link of a team, by its token's hash.
type Invitation struct {
	MemberID  string
	ExpiresAt time.Time
	Accepted  bool
}

// Invitations folds a members stream's invitations by token hash.
func Invitations(evs []events.Envelope) (map[string]*Invitation, error) {
	out := map[string]*Invitation{}
	for _, e := range evs {
		switch e.Type {
		case events.MemberInvited:
			var p events.MemberInvitedV1
			if err := e.Decode(&p); err != nil {
				return nil, err
			}
			out[p.TokenHash] = &Invitation{MemberID: p.MemberID, ExpiresAt: p.ExpiresAt}
		case events.MemberInvitationAccepted:
			var p events.MemberInvitationAcceptedV1
			if err := e.Decode(&p); err != nil {
				return nil, err
			}
			if inv := out[p.TokenHash]; inv != nil {
				inv.Accepted = true
			}
		}
	}
	return out, nil
}

// LinkSpentError is the one answer for every dead link (unknown, used,
// expired, its member removed): a link says nothing about why to whoever
// holds it, only what to do.
func LinkSpentError(why string) error {
	return &domain.GoneError{Code: "invitation_spent",
		Message: "this sign-in link " + why + "; ask your admin for a new one"}
}

// Accept decides whether the invitation with tokenHash may sign its member
// in at now: each link works once, within InvitationTTL, for a member still
// on the team (410 otherwise).
func (t *Team) Accept(invs map[string]*Invitation, tokenHash string, now time.Time, keyID string) (events.MemberInvitationAcceptedV1, error) {
	inv := invs[tokenHash]
	if inv == nil {
		return events.MemberInvitationAcceptedV1{}, LinkSpentError("is not valid (already used, expired or mistyped)")
	}
	if inv.Accepted {
		return events.MemberInvitationAcceptedV1{}, LinkSpentError("was already used")
	}
	if !now.Before(inv.ExpiresAt) {
		return events.MemberInvitationAcceptedV1{}, LinkSpentError("has expired")
	}
	if m, ok := t.Member(inv.MemberID); !ok || m.Removed {
		return events.MemberInvitationAcceptedV1{}, LinkSpentError("is for a member no longer on the team")
	}
	return events.MemberInvitationAcceptedV1{MemberID: inv.MemberID, TokenHash: tokenHash, KeyID: keyID}, nil
}
