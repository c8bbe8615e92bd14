package events

import "time"

// Event types of an account's members (issue 36), on the stream
// members/<account id>. An account with none of them has one implicit admin
// member: id = the account's user id, name = the account's name (see
// domain/members).
const (
	MemberAdded       = "member.added.v1"
	MemberRoleChanged = "member.role_changed.v1"
	MemberRemoved     = "member.removed.v1"
	// MemberInvited and MemberInvitationAccepted are a member's one-time
	// sign-in link: issued when they are added, spent when it signs them in.
	MemberInvited            = "member.invited.v1"
	MemberInvitationAccepted = "member.invitation_accepted.v1"
)

// MembersStream is an account's member list.
func MembersStream(accountID string) string { return "members/" + accountID }

// MemberAddedV1 adds a member to an account. By is the member who added
// them ("" for the account's first admin, written when the account is
// created, and for the CLI).
type MemberAddedV1 struct {
	MemberID string `json:"member_id"`
	Name     string `json:"name"`
	Role     string `json:"role"`
	By       string `json:"by,omitempty"`
}

// MemberRoleChangedV1 gives a member another role.
type MemberRoleChangedV1 struct {
	MemberID string `json:"member_id"`
	Role     string `json:"role"`
	By       string `json:"by,omitempty"`
}

// MemberRemovedV1 removes a member: their keys are revoked in the same
// append; their annotations stay attributed to them.
type MemberRemovedV1 struct {
	MemberID string `json:"member_id"`
	By       string `json:"by,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// MemberInvitedV1 is a one-time sign-in link for a member. Only the token's
// SHA-256 is kept, as for API keys: the log never holds a usable link.
type MemberInvitedV1 struct {
	MemberID  string    `json:"member_id"`
	TokenHash string    `json:"token_hash"`
	ExpiresAt time.Time `json:"expires_at"`
}

// MemberInvitationAcceptedV1 spends an invitation: the key it issued is the
// api_key.issued event of the same append.
type MemberInvitationAcceptedV1 struct {
	MemberID  string `json:"member_id"`
	TokenHash string `json:"token_hash"`
	KeyID     string `json:"key_id"`
}
