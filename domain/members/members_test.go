package members

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
)

func TestRolePermissions(t *testing.T) {
	want := map[Role][]Permission{
		Admin:    {Read, Annotate, Train, Delete, Query, Ingest, Manage},
		Reviewer: {Read, Annotate},
		Viewer:   {Read},
		"":       {},
		"owner":  {},
	}
	for role, allowed := range want {
		set := map[Permission]bool{}
		for _, p := range allowed {
			set[p] = true
		}
		for _, p := range Permissions {
			if got := role.May(p); got != set[p] {
				t.Errorf("%q may %s = %v, want %v", role, p, got, set[p])
			}
			err := role.Check(p)
			var fb *domain.ForbiddenError
			if set[p] && err != nil {
				t.Errorf("%q Check(%s) = %v", role, p, err)
			}
			if !set[p] && (!errors.As(err, &fb) || fb.Message != `the `+string(role)+` role may not `+string(p)+` (permission "`+string(p)+`")`) {
				t.Errorf("%q Check(%s) = %v, want a ForbiddenError naming the role and permission", role, p, err)
			}
		}
	}
}

func TestParseRole(t *testing.T) {
	for _, r := range Roles {
		if got, err := ParseRole("role", string(r)); err != nil || got != r {
			t.Errorf("ParseRole(%q) = %q, %v", r, got, err)
		}
	}
	_, err := ParseRole("role", "owner")
	var ve *domain.ValidationError
	if !errors.As(err, &ve) || ve.Field != "role" {
		t.Fatalf("ParseRole(owner) = %v, want a ValidationError on role", err)
	}
}

func env(typ string, p any) events.Envelope {
	b, _ := json.Marshal(p)
	return events.Envelope{Type: typ, Payload: b}
}

func TestAnOldAccountHasItsImplicitAdmin(t *testing.T) {
	team, err := Fold("u1", "acme", nil)
	if err != nil {
		t.Fatal(err)
	}
	got := team.List()
	if len(got) != 1 || got[0] != (Member{ID: "u1", Name: "acme", Role: Admin}) {
		t.Fatalf("members of an account without member events = %+v", got)
	}
	// A new account records the same member as an event: the fold is the same.
	team2, _ := Fold("u1", "acme", []events.Envelope{env(events.MemberAdded, events.MemberAddedV1{MemberID: "u1", Name: "acme", Role: "admin"})})
	if l := team2.List(); len(l) != 1 || l[0] != got[0] {
		t.Fatalf("explicit first admin = %+v, want %+v", l, got)
	}
}

func TestTeamRules(t *testing.T) {
	team, _ := Fold("u1", "acme", []events.Envelope{
		env(events.MemberAdded, events.MemberAddedV1{MemberID: "m2", Name: "Rita", Role: "reviewer", By: "u1"}),
	})
	if _, err := team.Add("m3", "rita", Reviewer, "u1"); !isConflict(err, "member_exists") {
		t.Errorf("a second Rita = %v, want member_exists", err)
	}
	if _, err := team.Add("m3", " ", Reviewer, "u1"); !isField(err, "name") {
		t.Errorf("blank name = %v", err)
	}
	if _, err := team.Add("m3", "Vic", "owner", "u1"); !isField(err, "role") {
		t.Errorf("bad role = %v", err)
	}
	if p, err := team.Add("m3", " Vic ", Viewer, "u1"); err != nil || p != (events.MemberAddedV1{MemberID: "m3", Name: "Vic", Role: "viewer", By: "u1"}) {
		t.Errorf("Add = %+v, %v", p, err)
	}
	// The last admin can be neither demoted nor removed.
	if _, err := team.ChangeRole("u1", Reviewer, "u1"); !isConflict(err, "last_admin") {
		t.Errorf("demoting the last admin = %v", err)
	}
	if _, err := team.Remove("u1", "u1", ""); !isConflict(err, "last_admin") {
		t.Errorf("removing the last admin = %v", err)
	}
	if _, err := team.ChangeRole("nobody", Admin, "u1"); !isNotFound(err) {
		t.Errorf("unknown member = %v", err)
	}
	// With a second admin the first may go.
	_ = team.Apply(env(events.MemberRoleChanged, events.MemberRoleChangedV1{MemberID: "m2", Role: "admin"}))
	if _, err := team.ChangeRole("u1", Viewer, "m2"); err != nil {
		t.Errorf("demoting one of two admins = %v", err)
	}
	if _, err := team.Remove("u1", "m2", "left"); err != nil {
		t.Errorf("removing one of two admins = %v", err)
	}
	_ = team.Apply(env(events.MemberRemoved, events.MemberRemovedV1{MemberID: "u1"}))
	if m, _ := team.Member("u1"); !m.Removed || team.Names()["u1"] != "acme" {
		t.Errorf("a removed member keeps their name: %+v", m)
	}
	if _, err := team.Remove("u1", "m2", ""); !isNotFound(err) {
		t.Errorf("removing twice = %v", err)
	}
	if _, err := team.Remove("m2", "m2", ""); !isConflict(err, "last_admin") {
		t.Errorf("removing the remaining admin = %v", err)
	}
}

func isConflict(err error, code string) bool {
	var c *domain.ConflictError
	return errors.As(err, &c) && c.Code == code
}

func isField(err error, field string) bool {
	var v *domain.ValidationError
	return errors.As(err, &v) && v.Field == field
}

func isNotFound(err error) bool {
	var n *domain.NotFoundError
	return errors.As(err, &n)
}
