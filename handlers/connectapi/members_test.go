package connectapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/criticml/critic/domain/members"
	"github.com/criticml/critic/handlers/connectapi"
	"github.com/criticml/critic/handlers/edge"
	"github.com/criticml/critic/handlers/otlp"
	"github.com/criticml/critic/handlers/rest"
)

// team is alice's account with an admin (alice's own key), two reviewers
// and a viewer, added through POST /members.
type team struct {
	keys map[string]string       // member name → key
	role map[string]members.Role // member name → role
	ids  map[string]string       // member name → member id
}

func (e *env) addMember(t *testing.T, name string, role members.Role) (id, key string) {
	t.Helper()
	status, body := e.rest(t, "POST", "/members", e.alice, map[string]any{"name": name, "role": string(role)})
	require.Equal(t, http.StatusCreated, status, string(body))
	var added struct {
		Member struct {
			ID, Name, Role string
			Removed        bool
		} `json:"member"`
		APIKey    string `json:"api_key"`
		SignInURL string `json:"sign_in_url"`
	}
	require.NoError(t, json.Unmarshal(body, &added))
	require.Equal(t, name, added.Member.Name)
	require.Equal(t, string(role), added.Member.Role)
	require.False(t, added.Member.Removed)
	require.True(t, strings.HasPrefix(added.APIKey, "critic_"), added.APIKey)
	require.True(t, strings.HasPrefix(added.SignInURL, e.url+"/#invite="), added.SignInURL)
	require.NotContains(t, added.SignInURL, added.APIKey, "a one-time invitation, not the key")
	return added.Member.ID, added.APIKey
}

func (e *env) team(t *testing.T) team {
	tm := team{keys: map[string]string{"alice": e.alice}, role: map[string]members.Role{"alice": members.Admin}, ids: map[string]string{"alice": e.aliceID}}
	for _, m := range []struct {
		name string
		role members.Role
	}{{"rita", members.Reviewer}, {"rob", members.Reviewer}, {"vic", members.Viewer}} {
		tm.ids[m.name], tm.keys[m.name] = e.addMember(t, m.name, m.role)
		tm.role[m.name] = m.role
	}
	return tm
}

func errorBody(t *testing.T, body []byte) (code, detail string) {
	t.Helper()
	var b struct{ Code, Detail string }
	require.NoError(t, json.Unmarshal(body, &b), string(body))
	return b.Code, b.Detail
}

// TestMembersAndRoles: an admin adds two reviewers and a viewer; each sees
// itself in GET /me and the whole team in GET /members; a role that may not
// gets 403 forbidden naming the permission and the role on every REST route
// that needs more (the list is the route table's, not written here), on
// /query, on every Connect method and on OTLP; the admin passes every check;
// bob's account still cannot see alice's ids (404).
func TestMembersAndRoles(t *testing.T) {
	e := start(t)
	refund, _ := e.importTwo(t, e.alice)
	tm := e.team(t)

	for name, key := range tm.keys {
		status, body := e.rest(t, "GET", "/me", key, nil)
		require.Equal(t, http.StatusOK, status, string(body))
		var me struct {
			UserID string `json:"user_id"`
			Member struct{ ID, Name, Role string }
		}
		require.NoError(t, json.Unmarshal(body, &me))
		require.Equal(t, e.aliceID, me.UserID, name)
		require.Equal(t, tm.ids[name], me.Member.ID, name)
		require.Equal(t, name, me.Member.Name)
		require.Equal(t, string(tm.role[name]), me.Member.Role, name)
	}
	status, body := e.rest(t, "GET", "/members", tm.keys["vic"], nil)
	require.Equal(t, http.StatusOK, status, string(body))
	var list struct {
		Members []struct{ ID, Name, Role string } `json:"members"`
	}
	require.NoError(t, json.Unmarshal(body, &list))
	var names []string
	for _, m := range list.Members {
		names = append(names, m.Name+":"+m.Role)
	}
	require.Equal(t, []string{"alice:admin", "rita:reviewer", "rob:reviewer", "vic:viewer"}, names)

	// Every REST route, from the route table.
	api := rest.New(edge.Deps{})
	api.Register(&recorder{})
	param := regexp.MustCompile(`\{[a-z_]+\}`)
	concrete := func(path string) string {
		return param.ReplaceAllStringFunc(path, func(p string) string {
			switch p {
			case "{trace_id}":
				return refund.Summary.Id
			case "{member_id}":
				return tm.ids["rob"]
			}
			return "x"
		})
	}
	routes := append(api.Routes(), rest.Route{Pattern: "POST /query", Permission: members.Query})
	refused := 0
	for _, name := range []string{"rita", "vic"} {
		role := tm.role[name]
		for _, r := range routes {
			if role.May(r.Permission) {
				continue
			}
			method, path, _ := strings.Cut(r.Pattern, " ")
			status, body := e.do(t, method, concrete(path), tm.keys[name])
			require.Equal(t, http.StatusForbidden, status, "%s (%s) %s: %s", name, role, r.Pattern, body)
			code, detail := errorBody(t, body)
			require.Equal(t, "forbidden", code)
			require.Contains(t, detail, `permission "`+string(r.Permission)+`"`, r.Pattern)
			require.Contains(t, detail, string(role), r.Pattern)
			refused++
		}
	}
	require.Greater(t, refused, 30)
	// Nothing a refused call sent changed anything: rob is still a reviewer.
	status, body = e.rest(t, "GET", "/members", e.alice, nil)
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, string(body), `"name":"rob","role":"reviewer"`)

	// A reviewer annotates and reads; the admin passes every route's check
	// (whatever the handler then says of an empty body).
	status, body = e.rest(t, "POST", "/traces/"+refund.Summary.Id+"/annotations", tm.keys["rita"], map[string]any{"rating": 1})
	require.Equal(t, http.StatusOK, status, string(body))
	for _, r := range routes {
		method, path, _ := strings.Cut(r.Pattern, " ")
		if method == "DELETE" {
			continue // deleting the trace or rob would change what the next routes see
		}
		status, body := e.do(t, method, concrete(path), e.alice)
		require.NotEqual(t, http.StatusForbidden, status, "admin %s: %s", r.Pattern, body)
	}

	// Another account's member ids are 404, whatever its role.
	status, _ = e.rest(t, "PATCH", "/members/"+tm.ids["rob"], e.bob, map[string]any{"role": "admin"})
	require.Equal(t, http.StatusNotFound, status)
	status, _ = e.rest(t, "GET", "/traces/"+refund.Summary.Id, e.bob, nil)
	require.Equal(t, http.StatusNotFound, status)

	// Connect: every method a role may not call is permission_denied.
	checked := 0
	protoregistry.GlobalFiles.RangeFilesByPackage("critic.v1", func(fd protoreflect.FileDescriptor) bool {
		for i := 0; i < fd.Services().Len(); i++ {
			svc := fd.Services().Get(i)
			for j := 0; j < svc.Methods().Len(); j++ {
				proc := "/" + string(svc.FullName()) + "/" + string(svc.Methods().Get(j).Name())
				perm, ok := connectapi.MethodPermission(proc)
				require.True(t, ok, proc)
				for _, name := range []string{"rita", "vic"} {
					if tm.role[name].May(perm) {
						continue
					}
					status, body := e.postJSON(t, proc, tm.keys[name], "{}")
					require.Equal(t, http.StatusForbidden, status, "%s %s: %s", name, proc, body)
					require.Contains(t, body, "permission_denied", proc)
					require.Contains(t, body, string(tm.role[name]), proc)
					checked++
				}
			}
		}
		return true
	})
	require.Greater(t, checked, 30)

	// OTLP needs the ingest permission on every endpoint that stores:
	// traces, logs, and the Langfuse path (Basic auth, the key as password).
	mux := http.NewServeMux()
	otlp.NewReceiver(edge.Deps{Cmds: e.srv.Cmds, Waiter: e.srv.Waiter, Auth: e.srv.Auth, MaxBody: 1 << 20}).Register(mux)
	otel := httptest.NewServer(mux)
	t.Cleanup(otel.Close)
	for name, key := range tm.keys {
		for _, path := range []string{otlp.Path, otlp.LogsPath, otlp.LangfusePath} {
			req, err := http.NewRequest("POST", otel.URL+path, strings.NewReader("{}"))
			require.NoError(t, err)
			if path == otlp.LangfusePath {
				req.SetBasicAuth("pk-lf", key)
			} else {
				req.Header.Set("Authorization", "Bearer "+key)
			}
			req.Header.Set("Content-Type", "application/json")
			res, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			_ = res.Body.Close()
			if tm.role[name].May(members.Ingest) {
				require.NotEqual(t, http.StatusForbidden, res.StatusCode, name+" "+path)
			} else {
				require.Equal(t, http.StatusForbidden, res.StatusCode, name+" "+path)
			}
		}
	}
}

// TestMemberRolesChangeAndRemoval: the last admin can be neither demoted
// nor removed (409); a removed member's key stops working at once, and
// their annotations stay attributed to them.
func TestMemberRolesChangeAndRemoval(t *testing.T) {
	e := start(t)
	refund, _ := e.importTwo(t, e.alice)
	robID, rob := e.addMember(t, "rob", members.Reviewer)

	status, body := e.rest(t, "PATCH", "/members/"+e.aliceID, e.alice, map[string]any{"role": "reviewer"})
	require.Equal(t, http.StatusConflict, status, string(body))
	code, _ := errorBody(t, body)
	require.Equal(t, "last_admin", code)
	status, body = e.rest(t, "DELETE", "/members/"+e.aliceID, e.alice, nil)
	require.Equal(t, http.StatusConflict, status, string(body))
	status, body = e.rest(t, "PATCH", "/members/"+robID, e.alice, map[string]any{"role": "owner"})
	require.Equal(t, http.StatusUnprocessableEntity, status, string(body))
	require.Contains(t, string(body), `"field":"role"`)
	status, body = e.rest(t, "POST", "/members", e.alice, map[string]any{"name": "rob", "role": "viewer"})
	require.Equal(t, http.StatusConflict, status, string(body))

	status, body = e.rest(t, "POST", "/traces/"+refund.Summary.Id+"/annotations", rob, map[string]any{"rating": -1, "comment": "wrong refund"})
	require.Equal(t, http.StatusOK, status, string(body))

	// Promote rob, then alice may step down.
	status, body = e.rest(t, "PATCH", "/members/"+robID, e.alice, map[string]any{"role": "admin"})
	require.Equal(t, http.StatusOK, status, string(body))
	require.Contains(t, string(body), `"role":"admin"`)
	status, body = e.rest(t, "POST", "/criteria", rob, map[string]any{"name": "Polite", "kind": "binary", "applies_to": "trace"})
	require.NotEqual(t, http.StatusForbidden, status, string(body))
	status, body = e.rest(t, "PATCH", "/members/"+robID, e.alice, map[string]any{"role": "reviewer"})
	require.Equal(t, http.StatusOK, status, string(body))

	status, body = e.rest(t, "DELETE", "/members/"+robID+"?reason=left", e.alice, nil)
	require.Equal(t, http.StatusNoContent, status, string(body))
	status, _ = e.rest(t, "GET", "/me", rob, nil)
	require.Equal(t, http.StatusUnauthorized, status, "a removed member's key")
	status, body = e.rest(t, "DELETE", "/members/"+robID, e.alice, nil)
	require.Equal(t, http.StatusNotFound, status, string(body))

	status, body = e.rest(t, "GET", "/members", e.alice, nil)
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, string(body), `"name":"rob","role":"reviewer"`)
	require.Contains(t, string(body), `"removed":true`)
	status, body = e.rest(t, "GET", "/traces/"+refund.Summary.Id, e.alice, nil)
	require.Equal(t, http.StatusOK, status)
	var d struct {
		Annotations []struct {
			MemberID   string `json:"member_id"`
			AuthorName string `json:"author_name"`
		} `json:"annotations"`
	}
	require.NoError(t, json.Unmarshal(body, &d))
	require.Len(t, d.Annotations, 1)
	require.Equal(t, robID, d.Annotations[0].MemberID)
	require.Equal(t, "rob", d.Annotations[0].AuthorName)
}

// recorder is a mux that only remembers nothing: Register needs one to
// build the route table.
type recorder struct{}

func (recorder) Handle(string, http.Handler) {}

// do sends an empty JSON object (or nothing, for GET) to path under /api/v1/rm
// or, for paths outside it, to the path itself.
func (e *env) do(t *testing.T, method, path, key string) (int, []byte) {
	t.Helper()
	var body any
	if method != "GET" {
		body = map[string]any{}
	}
	if rel, ok := strings.CutPrefix(path, rest.Prefix); ok {
		return e.rest(t, method, rel, key, body)
	}
	if strings.HasPrefix(path, "/api/") {
		req, err := http.NewRequest(method, e.url+path, strings.NewReader("{}"))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+key)
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		b := make([]byte, 4096)
		n, _ := res.Body.Read(b)
		return res.StatusCode, b[:n]
	}
	return e.rest(t, method, path, key, body)
}

// TestOneRatingPerMember: two reviewers rating the same step both count,
// one each, attributed to each; a second rating by the same member
// replaces theirs as the one-rating rule always did; the annotation export
// names each member.
func TestOneRatingPerMember(t *testing.T) {
	e := start(t)
	refund, _ := e.importTwo(t, e.alice)
	ritaID, rita := e.addMember(t, "rita", members.Reviewer)
	robID, rob := e.addMember(t, "rob", members.Reviewer)
	step := refund.Steps[3].Id
	rate := func(key string, rating int) {
		t.Helper()
		status, body := e.rest(t, "POST", "/traces/"+refund.Summary.Id+"/annotations", key, map[string]any{"step_id": step, "rating": rating})
		require.Equal(t, http.StatusOK, status, string(body))
	}
	ratings := func() map[string]int {
		t.Helper()
		status, body := e.rest(t, "GET", "/traces/"+refund.Summary.Id, e.alice, nil)
		require.Equal(t, http.StatusOK, status, string(body))
		var d struct {
			Annotations []struct {
				StepID     *string `json:"step_id"`
				Rating     *int    `json:"rating"`
				MemberID   string  `json:"member_id"`
				AuthorName string  `json:"author_name"`
			} `json:"annotations"`
		}
		require.NoError(t, json.Unmarshal(body, &d))
		out := map[string]int{}
		for _, a := range d.Annotations {
			require.NotNil(t, a.StepID)
			require.Equal(t, step, *a.StepID)
			_, dup := out[a.AuthorName+"/"+a.MemberID]
			require.False(t, dup, "one rating per member")
			out[a.AuthorName+"/"+a.MemberID] = *a.Rating
		}
		return out
	}
	rate(rita, 1)
	rate(rob, 1)
	require.Equal(t, map[string]int{"rita/" + ritaID: 1, "rob/" + robID: 1}, ratings())
	rate(rita, -1)
	require.Equal(t, map[string]int{"rita/" + ritaID: -1, "rob/" + robID: 1}, ratings())

	status, body := e.rest(t, "GET", "/export/annotations", e.alice, nil)
	require.Equal(t, http.StatusOK, status)
	byMember := map[string]string{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(body)), "\n") {
		var a struct {
			Author   string `json:"author"`
			MemberID string `json:"member_id"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &a))
		byMember[a.MemberID] = a.Author
	}
	require.Equal(t, map[string]string{ritaID: "rita", robID: "rob"}, byMember)

	// Pairs sum the members' ratings of a target: the refund trace rated
	// +1 by both reviewers is chosen against the shipping trace rita
	// rejects; once rob rates the refund -1 instead, its sum is 0 and no
	// trace pair is left.
	shipping := ""
	status, body = e.rest(t, "GET", "/traces", e.alice, nil)
	require.Equal(t, http.StatusOK, status)
	var list struct {
		Traces []struct{ ID string } `json:"traces"`
	}
	require.NoError(t, json.Unmarshal(body, &list))
	for _, tr := range list.Traces {
		if tr.ID != refund.Summary.Id {
			shipping = tr.ID
		}
	}
	rateTrace := func(key, id string, rating int) {
		t.Helper()
		status, body := e.rest(t, "POST", "/traces/"+id+"/annotations", key, map[string]any{"rating": rating})
		require.Equal(t, http.StatusOK, status, string(body))
	}
	tracePairs := func() int {
		t.Helper()
		status, body := e.rest(t, "GET", "/export/pairs", e.alice, nil)
		require.Equal(t, http.StatusOK, status, string(body))
		return strings.Count(string(body), `"granularity":"trace"`)
	}
	rateTrace(rita, refund.Summary.Id, 1)
	rateTrace(rob, refund.Summary.Id, 1)
	rateTrace(rita, shipping, -1)
	require.Equal(t, 1, tracePairs())
	rateTrace(rob, refund.Summary.Id, -1)
	require.Equal(t, 0, tracePairs(), "+1 (rita) and -1 (rob) sum to 0")
}

// TestMembersInSQL: the snapshot has a members table (the implicit admin
// first) and annotations carry member_id, so SQL can filter by member.
func TestMembersInSQL(t *testing.T) {
	e := start(t)
	refund, _ := e.importTwo(t, e.alice)
	ritaID, rita := e.addMember(t, "rita", members.Reviewer)
	status, body := e.rest(t, "POST", "/traces/"+refund.Summary.Id+"/annotations", rita, map[string]any{"rating": 1})
	require.Equal(t, http.StatusOK, status, string(body))
	query := func(sql string) [][]any {
		t.Helper()
		status, body := e.rest(t, "POST", "/query", e.alice, map[string]any{"sql": sql})
		require.Equal(t, http.StatusOK, status, string(body))
		var res struct {
			Rows [][]any `json:"rows"`
		}
		require.NoError(t, json.Unmarshal(body, &res))
		return res.Rows
	}
	require.Equal(t, [][]any{{e.aliceID, "alice", "admin", false}, {ritaID, "rita", "reviewer", false}},
		query("SELECT member_id, name, role, removed FROM members ORDER BY created_at"))
	require.Equal(t, [][]any{{ritaID, "rita", float64(1)}},
		query("SELECT a.member_id, m.name, a.rating FROM annotations a JOIN members m USING (member_id)"))
	status, body = e.rest(t, "POST", "/query", rita, map[string]any{"sql": "SELECT 1"})
	require.Equal(t, http.StatusForbidden, status, string(body))
}

// TestOnlyTheAuthorOrAnAdminChangesAnAnnotation: a reviewer cannot edit or
// remove another member's rating (403, nothing appended), the author can,
// and so can an admin.
func TestOnlyTheAuthorOrAnAdminChangesAnAnnotation(t *testing.T) {
	e := start(t)
	refund, _ := e.importTwo(t, e.alice)
	_, rita := e.addMember(t, "rita", members.Reviewer)
	_, rob := e.addMember(t, "rob", members.Reviewer)
	rate := func(key, step string) string {
		t.Helper()
		status, body := e.rest(t, "POST", "/traces/"+refund.Summary.Id+"/annotations", key, map[string]any{"step_id": step, "rating": 1})
		require.Equal(t, http.StatusOK, status, string(body))
		var a struct{ ID string }
		require.NoError(t, json.Unmarshal(body, &a))
		require.NotEmpty(t, a.ID, string(body))
		return a.ID
	}
	ritas := rate(rita, refund.Steps[3].Id)
	status, body := e.rest(t, "PATCH", "/annotations/"+ritas, rob, map[string]any{"rating": -1})
	require.Equal(t, http.StatusForbidden, status, string(body))
	require.Contains(t, string(body), "author")
	status, body = e.rest(t, "DELETE", "/annotations/"+ritas, rob, nil)
	require.Equal(t, http.StatusForbidden, status, string(body))

	status, body = e.rest(t, "PATCH", "/annotations/"+ritas, rita, map[string]any{"comment": "checked the refund policy"})
	require.Equal(t, http.StatusOK, status, string(body))
	status, body = e.rest(t, "PATCH", "/annotations/"+ritas, e.alice, map[string]any{"rating": -1})
	require.Equal(t, http.StatusOK, status, "an admin moderates: %s", body)
	status, body = e.rest(t, "DELETE", "/annotations/"+ritas, e.alice, nil)
	require.Equal(t, http.StatusNoContent, status, string(body))

	robs := rate(rob, refund.Steps[3].Id)
	status, body = e.rest(t, "DELETE", "/annotations/"+robs, rob, nil)
	require.Equal(t, http.StatusNoContent, status, "the author removes their own: %s", body)
}
