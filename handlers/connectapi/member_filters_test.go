package connectapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/commands"
	criticv1 "github.com/criticml/critic/schema/gen/critic/v1"
	"github.com/criticml/critic/schema/gen/critic/v1/criticv1connect"
)

// TestMemberFiltersOverConnect: the Connect API filters by member as REST's
// ?member= does (issue 36): ListTraces keeps the traces a member annotated,
// ExportAnnotations that member's annotations (each naming its member),
// ExportPairs the preview from their ratings alone (REST's pairs, byte for
// byte), and ReviewQueue is another member's queue for an admin only
// (PERMISSION_DENIED for a reviewer naming someone else). An id the account
// does not have — another account's member, another account, none at all —
// is INVALID_ARGUMENT unknown_member naming member on every one.
func TestMemberFiltersOverConnect(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	refund, shipping := e.importTwo(t, e.alice)
	tm := e.team(t)
	status, body := e.rest(t, "PUT", "/review-overlap", e.alice, map[string]any{"overlap": 2})
	require.Equal(t, http.StatusOK, status, string(body))
	for _, a := range []struct {
		who, trace string
		rating     int
	}{{"rita", refund.Summary.Id, 1}, {"rob", refund.Summary.Id, -1}, {"rob", shipping, 1}} {
		status, body := e.rest(t, "POST", "/traces/"+a.trace+"/annotations", tm.keys[a.who], map[string]any{"rating": a.rating})
		require.Equal(t, http.StatusOK, status, string(body))
	}
	traces := e.client()
	ann := criticv1connect.NewAnnotationServiceClient(http.DefaultClient, e.url)
	models := criticv1connect.NewRewardModelServiceClient(http.DefaultClient, e.url)

	listed := func(key, member string) []string {
		t.Helper()
		res, err := traces.ListTraces(ctx, withKey(key, &criticv1.ListTracesRequest{Member: new(member)}))
		require.NoError(t, err)
		var ids []string
		for _, tr := range res.Msg.Traces {
			ids = append(ids, tr.Id)
		}
		require.Len(t, ids, int(res.Msg.Total))
		sort.Strings(ids)
		return ids
	}
	both := []string{refund.Summary.Id, shipping}
	sort.Strings(both)
	require.Equal(t, []string{refund.Summary.Id}, listed(e.alice, tm.ids["rita"]))
	require.Equal(t, both, listed(tm.keys["vic"], tm.ids["rob"]), "any member may filter the list")
	require.Empty(t, listed(e.alice, tm.ids["vic"]))
	require.Equal(t, both, listed(e.alice, ""), "an empty member is no filter")

	annotations := func(key, member string) []*criticv1.ExportedAnnotation {
		t.Helper()
		s, err := ann.ExportAnnotations(ctx, withKey(key, &criticv1.ExportAnnotationsRequest{Member: new(member)}))
		require.NoError(t, err)
		var out []*criticv1.ExportedAnnotation
		for s.Receive() {
			out = append(out, s.Msg().Annotation)
		}
		require.NoError(t, s.Err())
		return out
	}
	robs := annotations(e.alice, tm.ids["rob"])
	require.Len(t, robs, 2)
	for _, a := range robs {
		require.Equal(t, tm.ids["rob"], a.MemberId)
		require.Equal(t, "rob", a.Author)
	}
	require.Len(t, annotations(e.alice, ""), 3)

	pairs := func(key, member string) []string {
		t.Helper()
		s, err := ann.ExportPairs(ctx, withKey(key, &criticv1.ExportPairsRequest{Member: new(member)}))
		require.NoError(t, err)
		var out []string
		for s.Receive() {
			p := s.Msg().Pair
			out = append(out, p.Chosen+" > "+p.Rejected)
		}
		require.NoError(t, s.Err())
		return out
	}
	restPairs := func(member string) []string {
		t.Helper()
		status, body := e.rest(t, "GET", "/export/pairs?member="+member, e.alice, nil)
		require.Equal(t, http.StatusOK, status, string(body))
		var out []string
		for line := range strings.SplitSeq(strings.TrimSpace(string(body)), "\n") {
			if line == "" {
				continue
			}
			var p struct{ Chosen, Rejected string }
			require.NoError(t, json.Unmarshal([]byte(line), &p))
			out = append(out, p.Chosen+" > "+p.Rejected)
		}
		return out
	}
	robPairs := pairs(e.alice, tm.ids["rob"])
	require.NotEmpty(t, robPairs, "rob rated the two traces apart")
	require.Equal(t, restPairs(tm.ids["rob"]), robPairs)
	require.Equal(t, restPairs(tm.ids["rita"]), pairs(e.alice, tm.ids["rita"]))
	require.NotEqual(t, robPairs, pairs(e.alice, tm.ids["rita"]), "rita's one rating makes other pairs than rob's two")
	withModel, err := ann.ExportPairs(ctx, withKey(e.alice, &criticv1.ExportPairsRequest{Member: new(tm.ids["rob"]), RewardModelId: new("m")}))
	require.NoError(t, err)
	require.False(t, withModel.Receive())
	requireDetail(t, requireCode(t, withModel.Err(), connect.CodeInvalidArgument), "invalid_request", "member")

	queue := func(key, member string) ([]string, error) {
		res, err := models.ReviewQueue(ctx, withKey(key, &criticv1.ReviewQueueRequest{Member: new(member)}))
		if err != nil {
			return nil, err
		}
		var ids []string
		for _, it := range res.Msg.Items {
			ids = append(ids, it.TraceId)
		}
		sort.Strings(ids)
		return ids, nil
	}
	// Overlap 2: the refund has its two judgments (rita, rob) and leaves
	// every queue; the shipping trace needs one more, from anyone but rob.
	q, err := queue(e.alice, tm.ids["rita"])
	require.NoError(t, err)
	require.Equal(t, []string{shipping}, q, "the admin sees rita's queue")
	q, err = queue(e.alice, tm.ids["rob"])
	require.NoError(t, err)
	require.Empty(t, q)
	q, err = queue(e.alice, "")
	require.NoError(t, err)
	require.Equal(t, []string{shipping}, q, "the admin's own queue, not rob's")
	q, err = queue(tm.keys["rita"], tm.ids["rita"])
	require.NoError(t, err)
	require.Equal(t, []string{shipping}, q, "a reviewer may name themselves")
	_, err = queue(tm.keys["rita"], tm.ids["rob"])
	ce := requireCode(t, err, connect.CodePermissionDenied)
	require.Contains(t, ce.Message(), "only an admin")

	// Progress over Connect (GET /members/progress): the admin sees every
	// member, rita her own row; overlap 2 over two traces, the refund done.
	team := criticv1connect.NewTeamServiceClient(http.DefaultClient, e.url)
	prog, err := team.GetMembersProgress(ctx, withKey(e.alice, &criticv1.GetMembersProgressRequest{}))
	require.NoError(t, err)
	require.EqualValues(t, 2, prog.Msg.Overlap)
	require.EqualValues(t, 2, prog.Msg.Items)
	require.EqualValues(t, 1, prog.Msg.Complete)
	rows := map[string]*criticv1.MemberProgress{}
	for _, r := range prog.Msg.Members {
		rows[r.Member.Name] = r
	}
	require.Len(t, rows, 4)
	require.EqualValues(t, 2, rows["rob"].Judged)
	require.EqualValues(t, 0, rows["rob"].GetRemaining())
	require.NotNil(t, rows["rob"].LastActivityAt)
	require.Nil(t, rows["vic"].Remaining, "a viewer has nothing to do")
	require.Nil(t, rows["alice"].LastActivityAt)
	mine, err := team.GetMembersProgress(ctx, withKey(tm.keys["rita"], &criticv1.GetMembersProgressRequest{}))
	require.NoError(t, err)
	require.Len(t, mine.Msg.Members, 1)
	require.Equal(t, "rita", mine.Msg.Members[0].Member.Name)
	require.EqualValues(t, 1, mine.Msg.Members[0].Judged)
	require.EqualValues(t, 1, mine.Msg.Members[0].GetRemaining())
	require.EqualValues(t, 1, mine.Msg.Complete, "the totals are the account's")

	other, err := e.srv.Cmds.CreateUser.Handle(ctx, commands.CreateUser{Name: "other"})
	require.NoError(t, err)
	require.NoError(t, e.srv.Waiter.Wait(ctx, other.LastEventID))
	for _, bad := range []string{other.UserID, "00000000-0000-4000-8000-000000000000", "rita"} {
		_, err := traces.ListTraces(ctx, withKey(e.alice, &criticv1.ListTracesRequest{Member: new(bad)}))
		requireDetail(t, requireCode(t, err, connect.CodeInvalidArgument), "unknown_member", "member")
		s, err := ann.ExportAnnotations(ctx, withKey(e.alice, &criticv1.ExportAnnotationsRequest{Member: new(bad)}))
		require.NoError(t, err)
		require.False(t, s.Receive(), "nothing is exported for %s", bad)
		requireDetail(t, requireCode(t, s.Err(), connect.CodeInvalidArgument), "unknown_member", "member")
		p, err := ann.ExportPairs(ctx, withKey(e.alice, &criticv1.ExportPairsRequest{Member: new(bad)}))
		require.NoError(t, err)
		require.False(t, p.Receive())
		requireDetail(t, requireCode(t, p.Err(), connect.CodeInvalidArgument), "unknown_member", "member")
		_, err = queue(e.alice, bad)
		requireDetail(t, requireCode(t, err, connect.CodeInvalidArgument), "unknown_member", "member")
	}
	// Another account's admin cannot filter by this account's members.
	_, err = traces.ListTraces(ctx, withKey(e.bob, &criticv1.ListTracesRequest{Member: new(tm.ids["rita"])}))
	requireDetail(t, requireCode(t, err, connect.CodeInvalidArgument), "unknown_member", "member")
}
