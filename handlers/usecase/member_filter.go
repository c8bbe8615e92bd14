package usecase

import (
	"context"
	"slices"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/members"
	"github.com/criticml/critic/projections/readmodel"
)

// MemberFilter checks the member of a filter by member (issue 36: REST's
// ?member= on the trace list, the review queue and the exports, and the
// same Connect fields): "" when none, else the id of a member of owner's
// account (a removed one too: their annotations stay theirs). An id the
// account does not have is 422 unknown_member naming member, whether it is
// another account's or none at all, so the filter tells nothing about
// other accounts.
func (b Backend) MemberFilter(ctx context.Context, owner, id string) (string, error) {
	if id == "" {
		return "", nil
	}
	ms, err := b.Queries.Members(ctx, owner)
	if err != nil {
		return "", err
	}
	if slices.ContainsFunc(ms, func(m readmodel.Member) bool { return m.ID == id }) {
		return id, nil
	}
	return "", &domain.ValidationError{Code: "unknown_member", Field: "member",
		Message: "member " + id + " is not a member of this account (GET /members lists them)"}
}

// OthersMember is MemberFilter where looking at another member's work
// (their review queue, their progress) is an admin's view: anyone else may
// name only themselves, or gets 403 from the role's check (the role's, not
// the key's: a read-only admin key reads, and this is reading). "" means
// the caller.
func (b Backend) OthersMember(ctx context.Context, caller *readmodel.Caller, id string) (string, error) {
	id, err := b.MemberFilter(ctx, caller.UserID, id)
	if err != nil || id == "" {
		return id, err
	}
	if id != Actor(caller).Member() { // the key's member, or the account for its implicit admin
		if err := caller.Role.Check(members.Manage); err != nil {
			return "", &domain.ForbiddenError{Message: "only an admin may look at another member's work (member " + id + "): " + err.Error()}
		}
	}
	return id, nil
}

// MembersProgress is who did what under the current overlap (issue 36;
// GET /members/progress and TeamService.GetMembersProgress): an admin sees
// every member, anyone else their own row alone (the queue's totals are
// the account's either way).
type MembersProgress struct {
	Overlap int `json:"overlap"`
	readmodel.QueueCoverage
	Members []readmodel.MemberProgress `json:"members"`
}

// MembersProgress reads it for caller.
func (b Backend) MembersProgress(ctx context.Context, caller *readmodel.Caller) (MembersProgress, error) {
	overlap, err := b.Queries.ReviewOverlap(ctx, caller.UserID)
	if err != nil {
		return MembersProgress{}, err
	}
	ps, cov, err := b.Queries.MembersProgress(ctx, caller.UserID, overlap)
	if err != nil {
		return MembersProgress{}, err
	}
	me, all := Actor(caller).Member(), caller.Role.May(members.Manage)
	out := MembersProgress{Overlap: overlap, QueueCoverage: cov, Members: []readmodel.MemberProgress{}}
	for _, p := range ps {
		if all || p.ID == me {
			out.Members = append(out.Members, p)
		}
	}
	return out, nil
}
