package apiserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/handlers/edge"
	"github.com/criticml/critic/handlers/rest"
)

// teamOf is the ops account's admin (its own key) plus the members added
// through POST /members: name → member id and key.
type teamOf struct {
	ids, keys map[string]string
}

func (e *opsEnv) addTeam(t *testing.T, roles ...[2]string) teamOf {
	t.Helper()
	tm := teamOf{ids: map[string]string{"admin": e.userID}, keys: map[string]string{"admin": e.key}}
	for _, nr := range roles {
		r := e.do(t, "POST", "/api/v1/rm/members", map[string]any{"name": nr[0], "role": nr[1]})
		require.Equal(t, http.StatusCreated, r.status, string(r.body))
		var added struct {
			Member struct{ ID string } `json:"member"`
			APIKey string              `json:"api_key"`
		}
		require.NoError(t, json.Unmarshal(r.body, &added))
		tm.ids[nr[0]], tm.keys[nr[0]] = added.Member.ID, added.APIKey
	}
	return tm
}

// as is do with another key of the account.
func (e *opsEnv) as(t *testing.T, key, method, path string, body any) reply {
	t.Helper()
	return e.do(t, method, path, body, "Authorization", "Bearer "+key)
}

func jsonlLines(body []byte) []string {
	var out []string
	for l := range bytes.SplitSeq(bytes.TrimSpace(body), []byte("\n")) {
		if len(l) > 0 {
			out = append(out, string(l))
		}
	}
	return out
}

// TestFilterByMember (issue 36): two reviewers rate — rita t1 good and t2
// bad, rob t1 bad and a comment on t3 — under overlap 2. ?member= narrows
// the trace list to what that member annotated, the annotations export to
// their lines and the pairs export to pairs of their ratings alone (rita's
// make t1 ≻ t2; everyone's cancel on t1 and make none); an admin reads
// another member's review queue, a reviewer only their own (403); an id
// the account does not have (another account's member, none at all) is
// 422 unknown_member naming member.
func TestFilterByMember(t *testing.T) {
	e := startOps(t, nil)
	imp := e.importTraces(t, "t1", "t2", "t3")
	require.Equal(t, http.StatusOK, imp.status, string(imp.body))
	var imported struct {
		TraceIDs []string `json:"trace_ids"`
	}
	require.NoError(t, json.Unmarshal(imp.body, &imported))
	ids := imported.TraceIDs
	tm := e.addTeam(t, [2]string{"rita", "reviewer"}, [2]string{"rob", "reviewer"}, [2]string{"vic", "viewer"})
	require.Equal(t, http.StatusOK, e.do(t, "PUT", "/api/v1/rm/review-overlap", map[string]any{"overlap": 2}).status)
	for _, a := range []struct {
		who   string
		trace int
		body  map[string]any
	}{{"rita", 0, map[string]any{"rating": 1}}, {"rita", 1, map[string]any{"rating": -1}},
		{"rob", 0, map[string]any{"rating": -1}}, {"rob", 2, map[string]any{"comment": "too slow"}}} {
		r := e.as(t, tm.keys[a.who], "POST", "/api/v1/rm/traces/"+ids[a.trace]+"/annotations", a.body)
		require.Equal(t, http.StatusOK, r.status, string(r.body))
	}
	title := map[string]string{ids[0]: "t1", ids[1]: "t2", ids[2]: "t3"}

	listed := func(key, member string) []string {
		r := e.as(t, key, "GET", "/api/v1/rm/traces?member="+member, nil)
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		requireSchema(t, "TraceList", r.body)
		var l struct {
			Traces []struct{ ID string } `json:"traces"`
			Total  int                   `json:"total"`
		}
		require.NoError(t, json.Unmarshal(r.body, &l))
		var out []string
		for _, tr := range l.Traces {
			out = append(out, title[tr.ID])
		}
		sort.Strings(out)
		require.Len(t, out, l.Total)
		return out
	}
	require.Equal(t, []string{"t1", "t2"}, listed(e.key, tm.ids["rita"]))
	require.Equal(t, []string{"t1", "t3"}, listed(tm.keys["vic"], tm.ids["rob"]), "any member may filter the list")
	require.Empty(t, listed(e.key, tm.ids["vic"]))
	require.Equal(t, []string{"t1", "t2", "t3"}, listed(e.key, ""))

	other, err := e.srv.Cmds.CreateUser.Handle(context.Background(), commands.CreateUser{Name: "other"})
	require.NoError(t, err)
	require.NoError(t, e.srv.Waiter.Wait(context.Background(), other.LastEventID))
	for _, bad := range []string{other.UserID, "00000000-0000-4000-8000-000000000000", "rita"} {
		for _, path := range []string{"/traces", "/export/annotations", "/export/pairs", "/review-queue"} {
			r := e.do(t, "GET", "/api/v1/rm"+path+"?member="+bad, nil)
			requireField(t, r, http.StatusUnprocessableEntity, "member")
			require.Contains(t, string(r.body), `"code":"unknown_member"`, path)
		}
	}
	// The other account's admin cannot filter by this account's members either.
	requireField(t, e.as(t, other.APIKey, "GET", "/api/v1/rm/traces?member="+tm.ids["rita"], nil), http.StatusUnprocessableEntity, "member")

	// Annotations export: rob's two lines, each naming rob.
	r := e.do(t, "GET", "/api/v1/rm/export/annotations?member="+tm.ids["rob"], nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	lines := jsonlLines(r.body)
	require.Len(t, lines, 2)
	for _, l := range lines {
		var a struct {
			MemberID string `json:"member_id"`
			Author   string `json:"author"`
		}
		require.NoError(t, json.Unmarshal([]byte(l), &a))
		require.Equal(t, tm.ids["rob"], a.MemberID)
		require.Equal(t, "rob", a.Author)
	}
	r = e.do(t, "GET", "/api/v1/rm/export/annotations", nil)
	require.Len(t, jsonlLines(r.body), 4)

	// Pairs: everyone's ratings cancel on t1 (no chosen trace, no pair);
	// rita's alone prefer t1 to t2.
	r = e.do(t, "GET", "/api/v1/rm/export/pairs", nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.Empty(t, jsonlLines(r.body))
	r = e.do(t, "GET", "/api/v1/rm/export/pairs?member="+tm.ids["rita"], nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	pairs := jsonlLines(r.body)
	require.Len(t, pairs, 1)
	var pair struct{ Chosen, Rejected any }
	require.NoError(t, json.Unmarshal([]byte(pairs[0]), &pair))
	chosen, _ := json.Marshal(pair.Chosen)
	rejected, _ := json.Marshal(pair.Rejected)
	require.Contains(t, string(chosen), "Refund order t1", pairs[0])
	require.Contains(t, string(rejected), "Refund order t2", pairs[0])
	r = e.do(t, "GET", "/api/v1/rm/export/pairs?member="+tm.ids["rob"], nil)
	require.Empty(t, jsonlLines(r.body))
	requireField(t, e.do(t, "GET", "/api/v1/rm/export/pairs?reward_model_id=00000000-0000-4000-8000-000000000000&member="+tm.ids["rita"], nil),
		http.StatusUnprocessableEntity, "member")

	// The review queue under overlap 2: t1 has its two judges; rita judged
	// t2, so hers is t3; rob's is t2 and t3.
	queue := func(key, member string) []string {
		path := "/api/v1/rm/review-queue"
		if member != "" {
			path += "?member=" + member
		}
		r := e.as(t, key, "GET", path, nil)
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		requireSchema(t, "ReviewQueue", r.body)
		var q struct {
			Items []struct {
				TraceID string `json:"trace_id"`
			} `json:"items"`
		}
		require.NoError(t, json.Unmarshal(r.body, &q))
		var out []string
		for _, it := range q.Items {
			out = append(out, title[it.TraceID])
		}
		sort.Strings(out)
		return out
	}
	require.Equal(t, []string{"t3"}, queue(tm.keys["rita"], ""))
	require.Equal(t, []string{"t3"}, queue(tm.keys["rita"], tm.ids["rita"]), "a reviewer may name themselves")
	require.Equal(t, []string{"t2", "t3"}, queue(tm.keys["rob"], ""))
	require.Equal(t, []string{"t2", "t3"}, queue(e.key, tm.ids["rob"]), "the admin sees rob's queue")
	require.Equal(t, []string{"t2", "t3"}, queue(e.key, ""), "the admin's own queue")
	for _, who := range []string{"rita", "vic"} {
		r := e.as(t, tm.keys[who], "GET", "/api/v1/rm/review-queue?member="+tm.ids["rob"], nil)
		require.Equal(t, http.StatusForbidden, r.status, string(r.body))
		require.Contains(t, string(r.body), "another member", who)
	}
}

// TestMembersProgress (issue 36): after two reviewers rate under overlap 2,
// GET /members/progress gives the admin every member's annotations,
// traces judged, traces their queue still offers and last activity (null
// for who never annotated; remaining null for the viewer), and the
// queue's coverage; SQL joins annotations to members as docs/api.md shows;
// a reviewer gets their own row alone.
func TestMembersProgress(t *testing.T) {
	e := startOps(t, nil)
	imp := e.importTraces(t, "t1", "t2", "t3")
	require.Equal(t, http.StatusOK, imp.status, string(imp.body))
	var imported struct {
		TraceIDs []string `json:"trace_ids"`
	}
	require.NoError(t, json.Unmarshal(imp.body, &imported))
	ids := imported.TraceIDs
	tm := e.addTeam(t, [2]string{"rita", "reviewer"}, [2]string{"rob", "reviewer"}, [2]string{"vic", "viewer"})
	require.Equal(t, http.StatusOK, e.do(t, "PUT", "/api/v1/rm/review-overlap", map[string]any{"overlap": 2}).status)
	for _, a := range []struct {
		who   string
		trace int
		body  map[string]any
	}{{"rita", 0, map[string]any{"rating": 1}}, {"rita", 1, map[string]any{"rating": -1}},
		{"rob", 0, map[string]any{"rating": -1}}, {"rob", 2, map[string]any{"comment": "too slow"}}} {
		r := e.as(t, tm.keys[a.who], "POST", "/api/v1/rm/traces/"+ids[a.trace]+"/annotations", a.body)
		require.Equal(t, http.StatusOK, r.status, string(r.body))
	}

	type row struct {
		ID             string  `json:"id"`
		Name           string  `json:"name"`
		Role           string  `json:"role"`
		Annotations    int     `json:"annotations"`
		Judged         int     `json:"judged"`
		Remaining      *int    `json:"remaining"`
		LastActivityAt *string `json:"last_activity_at"`
	}
	type progress struct {
		Overlap  int   `json:"overlap"`
		Items    int   `json:"items"`
		Complete int   `json:"complete"`
		Members  []row `json:"members"`
	}
	get := func(key string) progress {
		r := e.as(t, key, "GET", "/api/v1/rm/members/progress", nil)
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		requireSchema(t, "MembersProgress", r.body)
		var p progress
		require.NoError(t, json.Unmarshal(r.body, &p))
		return p
	}
	p := get(e.key)
	require.Equal(t, 2, p.Overlap)
	require.Equal(t, 3, p.Items)
	require.Equal(t, 1, p.Complete, "t1 has its two judges")
	var got []string
	for _, m := range p.Members {
		rem := "null"
		if m.Remaining != nil {
			rem = strings.Repeat("I", *m.Remaining)
		}
		got = append(got, m.Name+" "+m.Role+" annotations="+strings.Repeat("I", m.Annotations)+" judged="+strings.Repeat("I", m.Judged)+
			" remaining="+rem+" active="+map[bool]string{true: "yes", false: "never"}[m.LastActivityAt != nil])
	}
	require.Equal(t, []string{
		"ops admin annotations= judged= remaining=II active=never",
		"rita reviewer annotations=II judged=II remaining=I active=yes",
		"rob reviewer annotations=II judged=I remaining=II active=yes",
		"vic viewer annotations= judged= remaining=null active=never",
	}, got)

	// docs/api.md's join of annotations to members, in SQL.
	status, q := e.query(t, `SELECT m.name, count(*) FROM annotations a JOIN members m USING (member_id) WHERE a.rating IS NOT NULL GROUP BY m.name ORDER BY m.name`)
	require.Equal(t, http.StatusOK, status, q.Detail)
	require.Equal(t, [][]any{{"rita", float64(2)}, {"rob", float64(1)}}, q.Rows)

	mine := get(tm.keys["rita"])
	require.Len(t, mine.Members, 1)
	require.Equal(t, tm.ids["rita"], mine.Members[0].ID)
	require.Equal(t, 2, mine.Members[0].Judged)
	require.Equal(t, 3, mine.Items)
}

// TestTeamRoutesAcrossAccounts (issue 36's isolation on every route): the
// ops account has a reviewer, a disputed trace, overlap 2 and an
// adjudication; another account's admin calls every REST route of the
// route table — /members, /members/progress, /review-overlap, /agreement,
// /disputed and /traces/{id}/adjudications among them — with this
// account's ids. A route with an id answers 404 (or 422 for a body it
// refuses first), never 2xx; no answer names this account's traces or
// members (beyond a refusal echoing the id sent); and what this account reads afterwards is unchanged.
func TestTeamRoutesAcrossAccounts(t *testing.T) {
	e := startOps(t, nil)
	imp := e.importTraces(t, "t1", "t2")
	require.Equal(t, http.StatusOK, imp.status, string(imp.body))
	var imported struct {
		TraceIDs []string `json:"trace_ids"`
	}
	require.NoError(t, json.Unmarshal(imp.body, &imported))
	ids := imported.TraceIDs
	tm := e.addTeam(t, [2]string{"rita", "reviewer"})
	require.Equal(t, http.StatusOK, e.do(t, "PUT", "/api/v1/rm/review-overlap", map[string]any{"overlap": 2}).status)
	r := e.as(t, tm.keys["rita"], "POST", "/api/v1/rm/traces/"+ids[0]+"/annotations", map[string]any{"rating": 1})
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	var ann struct {
		ID string `json:"id"`
	}
	require.NoError(t, json.Unmarshal(r.body, &ann))
	require.Equal(t, http.StatusOK, e.do(t, "POST", "/api/v1/rm/traces/"+ids[0]+"/annotations", map[string]any{"rating": -1}).status)
	require.Equal(t, http.StatusOK, e.do(t, "POST", "/api/v1/rm/traces/"+ids[1]+"/annotations", map[string]any{"rating": 1}).status)
	r = e.do(t, "POST", "/api/v1/rm/traces/"+ids[1]+"/adjudications", map[string]any{"rating": -1, "reason": "ours"})
	require.Equal(t, http.StatusCreated, r.status, string(r.body))

	// What this account reads, before and after the other account's calls.
	reads := []string{"/traces/" + ids[0], "/traces/" + ids[1], "/members", "/members/progress", "/review-overlap", "/agreement", "/disputed",
		"/export/annotations", "/review-queue"}
	state := func() map[string]string {
		out := map[string]string{}
		for _, p := range reads {
			r := e.do(t, "GET", "/api/v1/rm"+p, nil)
			require.Equal(t, http.StatusOK, r.status, p+": "+string(r.body))
			out[p] = string(r.body)
		}
		return out
	}
	before := state()
	require.Contains(t, before["/disputed"], ids[0])
	require.Contains(t, before["/members"], "rita")

	other, err := e.srv.Cmds.CreateUser.Handle(context.Background(), commands.CreateUser{Name: "other"})
	require.NoError(t, err)
	require.NoError(t, e.srv.Waiter.Wait(context.Background(), other.LastEventID))

	api := rest.New(edge.Deps{})
	api.Register(http.NewServeMux())
	ours := []string{ids[0], ids[1], tm.ids["rita"], e.userID, ann.ID, "rita", "Refund order t1"}
	bodies := map[string]any{
		"POST /traces/{trace_id}/adjudications": map[string]any{"rating": 1, "reason": "theirs"},
		"POST /traces/{trace_id}/annotations":   map[string]any{"rating": 1},
		"PATCH /annotations/{annotation_id}":    map[string]any{"rating": 1},
		"PATCH /members/{member_id}":            map[string]any{"role": "admin"},
		"PUT /review-overlap":                   map[string]any{"overlap": 3},
		"PUT /traces/{trace_id}/contribution":   map[string]any{"contribute": true},
	}
	seen := map[string]bool{}
	for _, rt := range api.Routes() {
		method, path, _ := strings.Cut(rt.Pattern, " ")
		if !strings.HasPrefix(path, "/") || strings.HasPrefix(rt.Pattern, "POST /api/") {
			continue
		}
		concrete := strings.NewReplacer("{trace_id}", ids[0], "{member_id}", tm.ids["rita"], "{annotation_id}", ann.ID,
			"{model_id}", ids[0], "{run_id}", ids[0], "{criterion_id}", ids[0]).Replace(path)
		var body any = map[string]any{}
		if b, ok := bodies[rt.Pattern]; ok {
			body = b
		}
		if method == "GET" || method == "DELETE" {
			body = nil
		}
		r := e.as(t, other.APIKey, method, "/api/v1/rm"+concrete, body)
		if _, valid := bodies[rt.Pattern]; concrete != path && (valid || body == nil) {
			require.Equal(t, http.StatusNotFound, r.status, "%s: %s", rt.Pattern, r.body)
		} else if concrete != path {
			require.Contains(t, []int{http.StatusNotFound, http.StatusUnprocessableEntity}, r.status, "%s: %s", rt.Pattern, r.body)
		}
		for _, s := range ours {
			if r.status >= 400 && strings.Contains(concrete, s) {
				continue // a refusal may echo the id the caller sent
			}
			require.NotContains(t, string(r.body), s, "%s names this account's %q", rt.Pattern, s)
		}
		seen[path] = true
	}
	for _, p := range []string{"/members", "/members/progress", "/members/{member_id}", "/review-overlap", "/agreement", "/disputed", "/traces/{trace_id}/adjudications"} {
		require.True(t, seen[p], p)
	}
	require.Equal(t, before, state(), "another account's calls changed nothing here")
	r = e.as(t, other.APIKey, "GET", "/api/v1/rm/review-overlap", nil)
	require.JSONEq(t, `{"overlap":3}`, string(r.body), "the other account set its own overlap")
}

// TestDisputedNamesTheStep: a step two members rated differently is listed
// by GET /disputed with its zero-based step_index beside its step_id (the
// Team page shows "step 2"); a whole trace's has step_index null.
func TestDisputedNamesTheStep(t *testing.T) {
	e := startOps(t, nil)
	imp := e.importTraces(t, "t1")
	require.Equal(t, http.StatusOK, imp.status, string(imp.body))
	var imported struct {
		TraceIDs []string `json:"trace_ids"`
	}
	require.NoError(t, json.Unmarshal(imp.body, &imported))
	trace := imported.TraceIDs[0]
	tm := e.addTeam(t, [2]string{"rita", "reviewer"})
	step := e.stepID(t, trace, 1)
	for who, rating := range map[string]int{"admin": -1, "rita": 1} {
		for _, body := range []map[string]any{{"step_id": step, "rating": rating}, {"rating": rating}} {
			r := e.as(t, tm.keys[who], "POST", "/api/v1/rm/traces/"+trace+"/annotations", body)
			require.Equal(t, http.StatusOK, r.status, string(r.body))
		}
	}
	r := e.do(t, "GET", "/api/v1/rm/disputed", nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	requireSchema(t, "Disputed", r.body)
	var d struct {
		Items []struct {
			StepID    *string `json:"step_id"`
			StepIndex *int    `json:"step_index"`
		} `json:"items"`
	}
	require.NoError(t, json.Unmarshal(r.body, &d))
	require.Len(t, d.Items, 2, string(r.body))
	var got []string
	for _, it := range d.Items {
		if it.StepID == nil {
			require.Nil(t, it.StepIndex)
			got = append(got, "trace")
			continue
		}
		require.Equal(t, step, *it.StepID)
		require.NotNil(t, it.StepIndex, string(r.body))
		got = append(got, "step index "+strings.Repeat("I", *it.StepIndex))
	}
	sort.Strings(got)
	require.Equal(t, []string{"step index I", "trace"}, got)
}
