package usecase_test

import (
	"context"
	"encoding/json"
	"sort"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain/criteria"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/platform/eventstore"
)

// rateCriterion records member's value of a criterion on a whole trace
// (value as the JSON the reviewer sent) and applies it.
func (f *teamFixture) rateCriterion(t *testing.T, member, traceID, criterionID, value string) {
	t.Helper()
	ctx := context.Background()
	stream := events.TraceStream(traceID)
	loaded, err := f.store.LoadStreams(ctx, []string{stream})
	require.NoError(t, err)
	evs := loaded[stream]
	_, err = f.store.Append(ctx, eventstore.Meta{Actor: "user:" + member}, map[string]int64{stream: evs[len(evs)-1].Version}, []events.New{{
		ID: uuid.NewString(), Stream: stream, OwnerID: f.caller.UserID, Type: events.AnnotationAdded,
		Payload: events.AnnotationAddedV1{AnnotationID: uuid.NewString(), TraceID: traceID, AuthorID: member, AuthorName: "name of " + member,
			TraceRevision: 1, CriterionID: criterionID, Value: json.RawMessage(value)},
	}})
	require.NoError(t, err)
	f.catchUp(t)
}

// TestAgreementPerCriterion: GET /agreement's figures "per criterion"
// (issue 36), each Krippendorff's alpha with its metric, count and
// too_few, worked by hand here from the formula
// alpha = 1 − (n−1)·Σ o_ck δ²_ck / Σ n_c n_k δ²_ck:
//
// "grounded" (binary, nominal; yes = 1, no = 0), members A and B:
//
//	t00: yes yes   t01: no no   t02: yes no   t03: yes yes
//
// n = 8 (five yes, three no); o(yes,no) = o(no,yes) = 1, so
// Σ o δ = 2 and Σ n_c n_k δ = 2·5·3 = 30: alpha = 1 − 7·2/30 = 8/15 over
// 4 co-rated targets.
//
// "helpfulness" (scale 1–5, interval), members A, B, C:
//
//	t00: 5 4 5   t01: 2 2 (A, B)   t02: C 3 alone (not pairable)
//
// n = 5 (5, 4, 5, 2, 2); within t00 each ordered pair weighs 1/(3−1), so
// o(5,4) = o(4,5) = 1 and Σ o δ² = 2; Σ n_c n_k δ² = 2·(2·1·1 + 2·2·9 +
// 1·2·4) = 92: alpha = 1 − 4·2/92 = 21/23 over 2 co-rated targets.
//
// A criterion nobody used is left out, and the whole-trace ratings'
// account figure is unaffected (nothing rated: value null, n 0).
func TestAgreementPerCriterion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newTeamFixture(t, 4)
	define := func(name, kind string, scaleMax *int) string {
		t.Helper()
		applies := criteria.AppliesToTrace
		res, err := f.cmds.DefineCriterion.Handle(ctx, commands.DefineCriterion{Actor: f.actor, Definition: criteria.DefineInput{Name: &name, Kind: &kind, ScaleMax: scaleMax, AppliesTo: &applies}})
		require.NoError(t, err)
		return res.CriterionID
	}
	five := 5
	grounded := define("grounded", criteria.KindBinary, nil)
	helpful := define("helpfulness", criteria.KindScale, &five)
	define("unused", criteria.KindBinary, nil)
	f.catchUp(t)

	ids := []string{uuid.NewString(), uuid.NewString(), uuid.NewString()}
	sort.Strings(ids)
	a, b, c := ids[0], ids[1], ids[2]
	for _, r := range []struct {
		member, crit string
		trace        int
		value        string
	}{
		{a, grounded, 0, `"yes"`}, {b, grounded, 0, `"yes"`}, {a, grounded, 1, `"no"`}, {b, grounded, 1, `"no"`},
		{a, grounded, 2, `"yes"`}, {b, grounded, 2, `"no"`}, {a, grounded, 3, `"yes"`}, {b, grounded, 3, `"yes"`},
		{a, helpful, 0, `5`}, {b, helpful, 0, `4`}, {c, helpful, 0, `5`}, {a, helpful, 1, `2`}, {b, helpful, 1, `2`}, {c, helpful, 2, `3`},
	} {
		f.rateCriterion(t, r.member, f.ids[r.trace], r.crit, r.value)
	}

	rep, err := f.b.Agreement(ctx, f.caller, "")
	require.NoError(t, err)
	require.Nil(t, rep.Account.Value, "no whole-trace ratings")
	require.Equal(t, 0, rep.Account.N)
	require.Len(t, rep.Criteria, 2, "the unused criterion is left out: %+v", rep.Criteria)
	by := map[string]int{}
	for i, cr := range rep.Criteria {
		by[cr.Name] = i
	}
	g, h := rep.Criteria[by["grounded"]], rep.Criteria[by["helpfulness"]]

	require.Equal(t, grounded, g.CriterionID)
	require.Equal(t, criteria.KindBinary, g.Kind)
	require.Equal(t, "nominal", g.Metric)
	require.NotNil(t, g.Alpha.Value)
	require.InDelta(t, 8.0/15, *g.Alpha.Value, 1e-12)
	require.Equal(t, 4, g.Alpha.N)
	require.True(t, g.Alpha.TooFew)

	require.Equal(t, helpful, h.CriterionID)
	require.Equal(t, criteria.KindScale, h.Kind)
	require.Equal(t, "interval", h.Metric)
	require.NotNil(t, h.Alpha.Value)
	require.InDelta(t, 21.0/23, *h.Alpha.Value, 1e-12)
	require.Equal(t, 2, h.Alpha.N)
	require.True(t, h.Alpha.TooFew)

	// The JSON GET /agreement answers carries them with counts and too_few.
	raw, err := json.Marshal(rep)
	require.NoError(t, err)
	require.Contains(t, string(raw), `"criterion_id":"`+grounded+`","name":"grounded","kind":"binary","metric":"nominal","alpha":{"value":0.5333333333333333,"n":4,"too_few":true}`)
}
