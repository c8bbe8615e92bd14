package connectapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	criticv1 "github.com/criticml/critic/schema/gen/critic/v1"
	"github.com/criticml/critic/schema/gen/critic/v1/criticv1connect"
)

// TestTeamService: every TeamService method through the Connect client
// (issue 36), called by the admin and by a reviewer. The reviewer lists
// the members, reads the overlap, the agreement and the disputed targets,
// and is PERMISSION_DENIED on every write REST refuses it (add, change,
// remove a member, set the overlap, adjudicate), which changes nothing;
// the admin's writes answer what REST answers, and another account's
// member is NOT_FOUND.
func TestTeamService(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	c := criticv1connect.NewTeamServiceClient(http.DefaultClient, e.url)
	refund, _ := e.importTwo(t, e.alice)
	tm := e.team(t)
	admin, rita := e.alice, tm.keys["rita"]
	denied := func(err error, what string) {
		t.Helper()
		ce := requireCode(t, err, connect.CodePermissionDenied)
		require.Contains(t, ce.Message(), "reviewer", what)
	}

	// Members.
	for _, key := range []string{admin, rita} {
		list, err := c.ListMembers(ctx, withKey(key, &criticv1.ListMembersRequest{}))
		require.NoError(t, err)
		var names []string
		for _, m := range list.Msg.Members {
			names = append(names, m.Name+":"+m.Role)
		}
		require.Equal(t, []string{"alice:admin", "rita:reviewer", "rob:reviewer", "vic:viewer"}, names)
	}
	_, err := c.AddMember(ctx, withKey(rita, &criticv1.AddMemberRequest{Name: "zoe", Role: "viewer"}))
	denied(err, "AddMember")
	_, err = c.AddMember(ctx, withKey(admin, &criticv1.AddMemberRequest{Name: "zoe"}))
	requireDetail(t, requireCode(t, err, connect.CodeInvalidArgument), "invalid_request", "role")
	added, err := c.AddMember(ctx, withKey(admin, &criticv1.AddMemberRequest{Name: "zoe", Role: "viewer"}))
	require.NoError(t, err)
	zoe := added.Msg.Member
	require.Equal(t, "zoe", zoe.Name)
	require.Equal(t, "viewer", zoe.Role)
	require.True(t, strings.HasPrefix(added.Msg.ApiKey, "critic_"), added.Msg.ApiKey)
	status, body := e.rest(t, "GET", "/me", added.Msg.ApiKey, nil)
	require.Equal(t, http.StatusOK, status, string(body))
	require.Contains(t, string(body), `"name":"zoe"`, "the key signs zoe in")

	_, err = c.ChangeMemberRole(ctx, withKey(rita, &criticv1.ChangeMemberRoleRequest{MemberId: zoe.Id, Role: "admin"}))
	denied(err, "ChangeMemberRole")
	_, err = c.ChangeMemberRole(ctx, withKey(e.bob, &criticv1.ChangeMemberRoleRequest{MemberId: zoe.Id, Role: "admin"}))
	requireCode(t, err, connect.CodeNotFound)
	_, err = c.ChangeMemberRole(ctx, withKey(admin, &criticv1.ChangeMemberRoleRequest{MemberId: zoe.Id, Role: "boss"}))
	requireDetail(t, requireCode(t, err, connect.CodeInvalidArgument), "invalid_role", "role")
	changed, err := c.ChangeMemberRole(ctx, withKey(admin, &criticv1.ChangeMemberRoleRequest{MemberId: zoe.Id, Role: "reviewer"}))
	require.NoError(t, err)
	require.Equal(t, "reviewer", changed.Msg.Member.Role)
	_, err = c.ChangeMemberRole(ctx, withKey(admin, &criticv1.ChangeMemberRoleRequest{MemberId: e.aliceID, Role: "viewer"}))
	ce := requireCode(t, err, connect.CodeAborted)
	require.Contains(t, ce.Message(), "last admin")

	_, err = c.RemoveMember(ctx, withKey(rita, &criticv1.RemoveMemberRequest{MemberId: zoe.Id}))
	denied(err, "RemoveMember")
	status, _ = e.rest(t, "GET", "/me", added.Msg.ApiKey, nil)
	require.Equal(t, http.StatusOK, status, "a refused removal revokes nothing")
	_, err = c.RemoveMember(ctx, withKey(admin, &criticv1.RemoveMemberRequest{MemberId: zoe.Id, Reason: "contract ended"}))
	require.NoError(t, err)
	status, _ = e.rest(t, "GET", "/me", added.Msg.ApiKey, nil)
	require.Equal(t, http.StatusUnauthorized, status, "zoe's key is revoked")
	list, err := c.ListMembers(ctx, withKey(admin, &criticv1.ListMembersRequest{}))
	require.NoError(t, err)
	require.Len(t, list.Msg.Members, 5)
	require.Equal(t, "zoe", list.Msg.Members[4].Name)
	require.True(t, list.Msg.Members[4].Removed)

	// Review overlap.
	o, err := c.GetReviewOverlap(ctx, withKey(rita, &criticv1.GetReviewOverlapRequest{}))
	require.NoError(t, err)
	require.EqualValues(t, 1, o.Msg.Overlap)
	_, err = c.SetReviewOverlap(ctx, withKey(rita, &criticv1.SetReviewOverlapRequest{Overlap: proto.Int32(2)}))
	denied(err, "SetReviewOverlap")
	_, err = c.SetReviewOverlap(ctx, withKey(admin, &criticv1.SetReviewOverlapRequest{}))
	requireDetail(t, requireCode(t, err, connect.CodeInvalidArgument), "invalid_request", "overlap")
	_, err = c.SetReviewOverlap(ctx, withKey(admin, &criticv1.SetReviewOverlapRequest{Overlap: proto.Int32(11)}))
	requireCode(t, err, connect.CodeInvalidArgument)
	set, err := c.SetReviewOverlap(ctx, withKey(admin, &criticv1.SetReviewOverlapRequest{Overlap: proto.Int32(2)}))
	require.NoError(t, err)
	require.EqualValues(t, 2, set.Msg.Overlap)
	o, err = c.GetReviewOverlap(ctx, withKey(rita, &criticv1.GetReviewOverlapRequest{}))
	require.NoError(t, err)
	require.EqualValues(t, 2, o.Msg.Overlap)

	// Agreement and disputes: alice rates the refund trace up, rita down.
	for key, rating := range map[string]int{admin: 1, rita: -1} {
		status, body := e.rest(t, "POST", "/traces/"+refund.Summary.Id+"/annotations", key, map[string]any{"rating": rating})
		require.Equal(t, http.StatusOK, status, string(body))
	}
	ag, err := c.GetAgreement(ctx, withKey(rita, &criticv1.GetAgreementRequest{}))
	require.NoError(t, err)
	require.EqualValues(t, 10, ag.Msg.MinSample)
	require.EqualValues(t, 1, ag.Msg.Disputed)
	require.EqualValues(t, 1, ag.Msg.CoRated)
	require.EqualValues(t, 2, ag.Msg.Judgments)
	require.EqualValues(t, 1, ag.Msg.Account.N)
	require.True(t, ag.Msg.Account.TooFew)
	require.Len(t, ag.Msg.Pairwise, 1)
	require.EqualValues(t, 0, ag.Msg.Pairwise[0].Agreement.GetValue(), "alice and rita never agree")
	require.Len(t, ag.Msg.Members, 2)
	require.Nil(t, ag.Msg.Members[0].Model, "no model chosen")
	_, err = c.GetAgreement(ctx, withKey(rita, &criticv1.GetAgreementRequest{RewardModelId: new("00000000-0000-0000-0000-000000000000")}))
	requireCode(t, err, connect.CodeNotFound)

	disputed, err := c.ListDisputed(ctx, withKey(rita, &criticv1.ListDisputedRequest{}))
	require.NoError(t, err)
	require.Len(t, disputed.Msg.Items, 1)
	item := disputed.Msg.Items[0]
	require.Equal(t, refund.Summary.Id, item.TraceId)
	require.Nil(t, item.StepId)
	require.Nil(t, item.Adjudication)
	require.Len(t, item.Values, 2)
	got := map[string]float64{}
	for _, v := range item.Values {
		got[v.Name] = v.Value.GetNumberValue()
	}
	require.Equal(t, map[string]float64{"alice": 1, "rita": -1}, got)

	_, err = c.Adjudicate(ctx, withKey(rita, &criticv1.AdjudicateRequest{TraceId: refund.Summary.Id, Rating: proto.Int32(-1), Reason: "mine"}))
	denied(err, "Adjudicate")
	_, err = c.Adjudicate(ctx, withKey(admin, &criticv1.AdjudicateRequest{TraceId: refund.Summary.Id, Rating: proto.Int32(1)}))
	requireDetail(t, requireCode(t, err, connect.CodeInvalidArgument), "invalid_adjudication", "reason")
	_, err = c.Adjudicate(ctx, withKey(e.bob, &criticv1.AdjudicateRequest{TraceId: refund.Summary.Id, Rating: proto.Int32(1), Reason: "r"}))
	require.Error(t, err, "bob cannot adjudicate alice's trace")
	adj, err := c.Adjudicate(ctx, withKey(admin, &criticv1.AdjudicateRequest{TraceId: refund.Summary.Id, Rating: proto.Int32(1), Reason: "the refund was issued"}))
	require.NoError(t, err)
	require.Equal(t, "the refund was issued", adj.Msg.Adjudication.Reason)
	require.Equal(t, e.aliceID, adj.Msg.Adjudication.By)
	require.EqualValues(t, 1, adj.Msg.Adjudication.GetRating())
	disputed, err = c.ListDisputed(ctx, withKey(rita, &criticv1.ListDisputedRequest{}))
	require.NoError(t, err)
	require.Len(t, disputed.Msg.Items, 1)
	require.NotNil(t, disputed.Msg.Items[0].Adjudication)
	require.Equal(t, adj.Msg.Adjudication.AdjudicationId, disputed.Msg.Items[0].Adjudication.AdjudicationId)
	// REST sees the same adjudication.
	status, body = e.rest(t, "GET", "/disputed", rita, nil)
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, string(body), `"reason":"the refund was issued"`)
}
