// Package members is an account's team (issue 36): who may act on the
// account's data and with which role. The account stays the unit of
// isolation; a member is who inside it did something, and a role is what
// they may do. Routes declare a Permission, never a role, so the role →
// permission table below is the one place that says what a role allows.
package members

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
)

// Role is what a member is.
type Role string

// The roles.
const (
	Admin    Role = "admin"    // everything: members, training, deletion, SQL, ingest, settings
	Reviewer Role = "reviewer" // reads traces and annotates; trains, deletes and queries nothing
	Viewer   Role = "viewer"   // reads only
)

// Roles lists the roles, most powerful first.
var Roles = []Role{Admin, Reviewer, Viewer}

// Permission is what a route or method needs.
type Permission string

// The permissions.
const (
	// Read: list and view traces, models, criteria, exports.
	Read Permission = "read"
	// Annotate: rate, comment, set criterion values, review comparisons,
	// ask for review aids (section summaries, completion estimates).
	Annotate Permission = "annotate"
	// Train: create, retry and steer reward models and GEPA runs, score
	// and (re)label traces with models.
	Train Permission = "train"
	// Delete: delete traces.
	Delete Permission = "delete"
	// Query: run SQL over the account's snapshot.
	Query Permission = "query"
	// Ingest: import traces, upload transcripts, OTLP.
	Ingest Permission = "ingest"
	// Manage: members, criteria, guidelines, sources, contribution and
	// other account settings.
	Manage Permission = "manage"
)

// Permissions lists every permission.
var Permissions = []Permission{Read, Annotate, Train, Delete, Query, Ingest, Manage}

// grants is the role → permission table.
var grants = map[Role]map[Permission]bool{
	Admin:    {Read: true, Annotate: true, Train: true, Delete: true, Query: true, Ingest: true, Manage: true},
	Reviewer: {Read: true, Annotate: true},
	Viewer:   {Read: true},
}

// May says whether role r has permission p. An unknown role may nothing.
func (r Role) May(p Permission) bool { return grants[r][p] }

// Check is May as an error: a ForbiddenError naming the role and the
// permission (403 "forbidden" at the edge).
func (r Role) Check(p Permission) error {
	if r.May(p) {
		return nil
	}
	return &domain.ForbiddenError{Message: fmt.Sprintf("the %s role may not %s (permission %q)", r, p, p)}
}

// ParseRole reads a role; anything else is a 422 naming field.
func ParseRole(field, s string) (Role, error) {
	if slices.Contains(Roles, Role(s)) {
		return Role(s), nil
	}
	return "", &domain.ValidationError{Code: "invalid_role", Field: field,
		Message: fmt.Sprintf("%s must be one of admin, reviewer, viewer (got %q)", field, s)}
}

// MaxNameRunes bounds a member's display name.
const MaxNameRunes = 80

// CheckName validates a member's display name.
func CheckName(name string) error {
	n := strings.TrimSpace(name)
	if n == "" {
		return domain.InvalidField("name", "name must not be empty")
	}
	if utf8.RuneCountInString(n) > MaxNameRunes {
		return domain.InvalidField("name", fmt.Sprintf("name must be at most %d characters", MaxNameRunes))
	}
	return nil
}

// Member is one member of an account.
type Member struct {
	ID      string
	Name    string
	Role    Role
	Removed bool
}

// Team is an account's members as its event stream says.
type Team struct {
	AccountID string
	byID      map[string]*Member
	order     []string
}

// Implicit is the member every account has before any member event: its
// admin, with the account's id and name. Accounts created before members
// existed have only this one; new accounts record it as member.added.
func Implicit(accountID, accountName string) Member {
	return Member{ID: accountID, Name: accountName, Role: Admin}
}

// Fold replays an account's members stream over its implicit admin.
func Fold(accountID, accountName string, evs []events.Envelope) (*Team, error) {
	t := &Team{AccountID: accountID, byID: map[string]*Member{}}
	t.put(Implicit(accountID, accountName))
	for _, e := range evs {
		if err := t.Apply(e); err != nil {
			return nil, err
		}
	}
	return t, nil
}

func (t *Team) put(m Member) {
	if _, ok := t.byID[m.ID]; !ok {
		t.order = append(t.order, m.ID)
	}
	t.byID[m.ID] = &m
}

// Apply folds one event of the members stream.
func (t *Team) Apply(e events.Envelope) error {
	switch e.Type {
	case events.MemberAdded:
		var p events.MemberAddedV1
		if err := e.Decode(&p); err != nil {
			return err
		}
		t.put(Member{ID: p.MemberID, Name: p.Name, Role: Role(p.Role)})
	case events.MemberRoleChanged:
		var p events.MemberRoleChangedV1
		if err := e.Decode(&p); err != nil {
			return err
		}
		if m := t.byID[p.MemberID]; m != nil {
			m.Role = Role(p.Role)
		}
	case events.MemberRemoved:
		var p events.MemberRemovedV1
		if err := e.Decode(&p); err != nil {
			return err
		}
		if m := t.byID[p.MemberID]; m != nil {
			m.Removed = true
		}
	}
	return nil
}

// Member returns a member (removed ones included).
func (t *Team) Member(id string) (Member, bool) {
	m, ok := t.byID[id]
	if !ok {
		return Member{}, false
	}
	return *m, true
}

// List returns the members in the order they joined.
func (t *Team) List() []Member {
	out := make([]Member, 0, len(t.order))
	for _, id := range t.order {
		out = append(out, *t.byID[id])
	}
	return out
}

func (t *Team) admins() int {
	n := 0
	for _, m := range t.byID {
		if !m.Removed && m.Role == Admin {
			n++
		}
	}
	return n
}

// Add decides a new member. by is the acting member ("" for the system).
func (t *Team) Add(id, name string, role Role, by string) (events.MemberAddedV1, error) {
	if err := CheckName(name); err != nil {
		return events.MemberAddedV1{}, err
	}
	if _, err := ParseRole("role", string(role)); err != nil {
		return events.MemberAddedV1{}, err
	}
	name = strings.TrimSpace(name)
	for _, m := range t.byID {
		if !m.Removed && strings.EqualFold(m.Name, name) {
			return events.MemberAddedV1{}, &domain.ConflictError{Code: "member_exists", Message: fmt.Sprintf("a member named %q already exists", name)}
		}
	}
	return events.MemberAddedV1{MemberID: id, Name: name, Role: string(role), By: by}, nil
}

// ChangeRole decides a role change. The last admin cannot be demoted
// (409): an account always has someone who can manage it.
func (t *Team) ChangeRole(id string, role Role, by string) (events.MemberRoleChangedV1, error) {
	if _, err := ParseRole("role", string(role)); err != nil {
		return events.MemberRoleChangedV1{}, err
	}
	m, ok := t.byID[id]
	if !ok || m.Removed {
		return events.MemberRoleChangedV1{}, domain.NotFound("member", id)
	}
	if m.Role == Admin && role != Admin && t.admins() == 1 {
		return events.MemberRoleChangedV1{}, &domain.ConflictError{Code: "last_admin", Message: "member " + id + " is the account's last admin and cannot be demoted"}
	}
	return events.MemberRoleChangedV1{MemberID: id, Role: string(role), By: by}, nil
}

// Remove decides a removal. The last admin cannot be removed (409).
func (t *Team) Remove(id, by, reason string) (events.MemberRemovedV1, error) {
	m, ok := t.byID[id]
	if !ok || m.Removed {
		return events.MemberRemovedV1{}, domain.NotFound("member", id)
	}
	if m.Role == Admin && t.admins() == 1 {
		return events.MemberRemovedV1{}, &domain.ConflictError{Code: "last_admin", Message: "member " + id + " is the account's last admin and cannot be removed"}
	}
	return events.MemberRemovedV1{MemberID: id, By: by, Reason: reason}, nil
}

// Names returns member id → display name, removed members included, so
// old annotations keep their author.
func (t *Team) Names() map[string]string {
	out := make(map[string]string, len(t.byID))
	for id, m := range t.byID {
		out[id] = m.Name
	}
	return out
}
