package usecase_test

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/agreement"
	"github.com/criticml/critic/projections/readmodel"
)

// TestAgreementAndDisputedFromTheReadModel: three members' ratings of
// five traces give the figures of the formulas, worked by hand here:
//
//	t00: A +1, B +1, C +1   t01: A −1, B −1   t02: A +1, B −1
//	t03: A +1, B +1         t04: C −1 (alone: not pairable)
//
// Pairable values: 9 (six +1, three −1); coincidences o(+,+) = 3 + 2,
// o(−,−) = 2, o(+,−) = o(−,+) = 1. With δ² = (c − k)²: D_o = 2·1·4/9 =
// 8/9, D_e = 2·6·3·4/(9·8) = 2, alpha = 1 − (8/9)/2 = 5/9 over 4
// co-rated targets (too few). A and B agree on 3 of 4; t02 is the one
// dispute, and an adjudication of it shows with its reason.
func TestAgreementAndDisputedFromTheReadModel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newTeamFixture(t, 5)
	ids := []string{uuid.NewString(), uuid.NewString(), uuid.NewString()}
	sort.Strings(ids) // the report lists members in id order
	a, b, c := ids[0], ids[1], ids[2]
	for _, r := range []struct {
		member string
		trace  int
		rating int
	}{{a, 0, 1}, {b, 0, 1}, {c, 0, 1}, {a, 1, -1}, {b, 1, -1}, {a, 2, 1}, {b, 2, -1}, {a, 3, 1}, {b, 3, 1}, {c, 4, -1}} {
		f.rate(t, r.member, f.ids[r.trace], r.rating)
	}
	rep, err := f.b.Agreement(ctx, f.caller, "")
	require.NoError(t, err)
	require.Equal(t, agreement.MinSample, rep.MinSample)
	require.NotNil(t, rep.Account.Value)
	require.InDelta(t, 5.0/9, *rep.Account.Value, 1e-12)
	require.Equal(t, 4, rep.Account.N)
	require.True(t, rep.Account.TooFew)
	require.Equal(t, 4, rep.CoRated)
	require.Equal(t, 10, rep.Judgments)
	require.Equal(t, 1, rep.Disputed)
	require.Nil(t, rep.RewardModelID)

	pair := map[string]agreement.Figure{}
	for _, p := range rep.Pairwise {
		pair[p.A+"-"+p.B] = p.Figure
	}
	require.Len(t, pair, 3)
	require.Equal(t, 4, pair[a+"-"+b].N)
	require.InDelta(t, 0.75, *pair[a+"-"+b].Value, 1e-12)
	require.Equal(t, 1, pair[a+"-"+c].N)
	require.Equal(t, 1.0, *pair[b+"-"+c].Value)

	require.Len(t, rep.Members, 3)
	ma, mc := rep.Members[0], rep.Members[2]
	require.Equal(t, a, ma.Member)
	require.Equal(t, "name of "+a, ma.Name)
	require.Equal(t, 4, ma.Judged)
	require.Equal(t, 4, ma.Consensus.N, "t00 (B and C +1), t01, t02, t03 against B")
	require.InDelta(t, 0.75, *ma.Consensus.Value, 1e-12)
	require.Nil(t, ma.Model)
	require.Equal(t, 2, mc.Judged)
	require.Equal(t, 1, mc.Consensus.N, "t04 has no one else")

	// The report's JSON carries counts and too_few on every figure.
	raw, err := json.Marshal(rep)
	require.NoError(t, err)
	require.Contains(t, string(raw), `"account":{"value":0.5555555555555556,"n":4,"too_few":true}`)

	// The disputed view: t02, with both values, not yet adjudicated.
	d, err := f.b.Disputed(ctx, f.caller)
	require.NoError(t, err)
	require.Len(t, d.Items, 1)
	it := d.Items[0]
	require.Equal(t, f.ids[2], it.TraceID)
	require.Equal(t, "T02", it.TraceTitle)
	require.Nil(t, it.StepID)
	require.Nil(t, it.Adjudication)
	require.Len(t, it.Values, 2)
	require.Equal(t, a, it.Values[0].Member)
	require.JSONEq(t, `1`, string(it.Values[0].Value))
	require.JSONEq(t, `-1`, string(it.Values[1].Value))

	// An adjudication needs a reason; with one it is recorded and shown.
	down := -1
	_, err = f.cmds.Adjudicate.Handle(ctx, commands.Adjudicate{Actor: f.actor, Input: commands.AdjudicateInput{TraceID: f.ids[2], Rating: &down}})
	var ve *domain.ValidationError
	require.True(t, errors.As(err, &ve), "%v", err)
	require.Equal(t, "reason", ve.Field)
	f.catchUp(t)
	d, err = f.b.Disputed(ctx, f.caller)
	require.NoError(t, err)
	require.Nil(t, d.Items[0].Adjudication, "nothing half-written")

	_, err = f.cmds.Adjudicate.Handle(ctx, commands.Adjudicate{Actor: f.actor, Input: commands.AdjudicateInput{TraceID: f.ids[2], Rating: &down, Reason: "the answer contradicts the order status"}})
	require.NoError(t, err)
	f.catchUp(t)
	d, err = f.b.Disputed(ctx, f.caller)
	require.NoError(t, err)
	require.NotNil(t, d.Items[0].Adjudication)
	require.Equal(t, "the answer contradicts the order status", d.Items[0].Adjudication.Reason)
	require.Equal(t, -1, *d.Items[0].Adjudication.Rating)
	require.Equal(t, f.caller.UserID, d.Items[0].Adjudication.By)

	// Another account can neither adjudicate the trace nor see the dispute.
	other, err := f.cmds.CreateUser.Handle(ctx, commands.CreateUser{Name: "other-team"})
	require.NoError(t, err)
	_, err = f.cmds.Adjudicate.Handle(ctx, commands.Adjudicate{Actor: commands.Actor{UserID: other.UserID}, Input: commands.AdjudicateInput{TraceID: f.ids[2], Rating: &down, Reason: "x"}})
	var nf *domain.NotFoundError
	require.True(t, errors.As(err, &nf), "%v", err)
	f.catchUp(t)
	d, err = f.b.Disputed(ctx, &readmodel.Caller{UserID: other.UserID})
	require.NoError(t, err)
	require.Empty(t, d.Items)
}
