package stepscores

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain/labels"
)

func scoreWith(checks map[string]Check, ls ...*labels.Label) Result {
	return ScoreWith(make([]labels.Chunk, len(ls)), ls, checks)
}

func certain(q Question, option string) map[string]float64 {
	p := map[string]float64{}
	for _, o := range q.Options {
		p[o.ID] = 0
	}
	p[option] = 1
	return p
}

// distributions is a grid over q's options in steps of 0.1, every
// distribution summing to one, plus each option with certainty.
func distributions(q Question) []map[string]float64 {
	var out []map[string]float64
	n := len(q.Options)
	var rec func(i, left int, cur []int)
	rec = func(i, left int, cur []int) {
		if i == n-1 {
			cur = append(cur, left)
			p := map[string]float64{}
			for k, o := range q.Options {
				p[o.ID] = float64(cur[k]) / 10
			}
			out = append(out, p)
			return
		}
		for v := 0; v <= left; v++ {
			rec(i+1, left-v, append(append([]int{}, cur...), v))
		}
	}
	rec(0, 10, nil)
	return out
}

func TestBlend(t *testing.T) {
	t.Parallel()
	q := AnswerQuestion
	cases := []struct {
		name string
		p    map[string]float64
		want float64
		ok   bool
	}{
		{"certain solves", certain(q, "solves"), UnreactedCeiling, true},
		{"certain wrong", certain(q, "wrong"), -0.5, true},
		{"even", map[string]float64{"solves": 0.25, "partly": 0.25, "does_not": 0.25, "wrong": 0.25}, -0.05, true},
		{"mostly solves", map[string]float64{"solves": 0.8, "partly": 0.2, "does_not": 0, "wrong": 0}, 0.38, true},
		{"rounding slack is renormalised", map[string]float64{"solves": 0.505, "partly": 0.505, "does_not": 0, "wrong": 0}, 0.275, true},
		{"missing option", map[string]float64{"solves": 0.5, "partly": 0.5, "does_not": 0}, 0, false},
		{"unknown option", map[string]float64{"solves": 0.5, "partly": 0.5, "does_not": 0, "great": 0}, 0, false},
		{"extra option", map[string]float64{"solves": 0.5, "partly": 0.5, "does_not": 0, "wrong": 0, "great": 0}, 0, false},
		{"negative", map[string]float64{"solves": 1.2, "partly": -0.2, "does_not": 0, "wrong": 0}, 0, false},
		{"above one", map[string]float64{"solves": 1.5, "partly": 0, "does_not": 0, "wrong": 0}, 0, false},
		{"NaN", map[string]float64{"solves": math.NaN(), "partly": 1, "does_not": 0, "wrong": 0}, 0, false},
		{"Inf", map[string]float64{"solves": math.Inf(1), "partly": 0, "does_not": 0, "wrong": 0}, 0, false},
		{"total below one", map[string]float64{"solves": 0.3, "partly": 0.3, "does_not": 0, "wrong": 0}, 0, false},
		{"total above one", map[string]float64{"solves": 0.6, "partly": 0.6, "does_not": 0, "wrong": 0}, 0, false},
		{"all zero", map[string]float64{"solves": 0, "partly": 0, "does_not": 0, "wrong": 0}, 0, false},
		{"empty", map[string]float64{}, 0, false},
	}
	for _, c := range cases {
		got, ok := Blend(q, c.p)
		require.Equal(t, c.ok, ok, c.name)
		if c.ok {
			require.InDelta(t, c.want, got, 1e-6, c.name)
		}
	}
}

// TestBlendBoundUnconfirmedNeverBeatsAccepted: whatever the grading model
// answers, a checked unreacted answer earns less than the lowest accepted
// reaction, in its own points and in its task's score against the same task
// answered and accepted.
func TestBlendBoundUnconfirmedNeverBeatsAccepted(t *testing.T) {
	t.Parallel()
	minAccepted := math.Inf(1)
	for _, v := range []string{labels.VerdictConfirmed, labels.VerdictAccepted, labels.VerdictAcceptedWithCaveat} {
		minAccepted = math.Min(minAccepted, ReactionPoints[v])
	}
	for _, o := range AnswerQuestion.Options {
		require.Less(t, o.Points, minAccepted, o.ID)
		require.GreaterOrEqual(t, o.Points, -1.0, o.ID)
	}
	for _, outcome := range []string{labels.OutcomeSolved, labels.OutcomeNone, labels.OutcomePartial, labels.OutcomeNotFound, labels.OutcomeFailed} {
		accepted := scoreWith(nil, request("u0", "t"), tool("a1", "t", labels.EffectLookup, labels.ResultOK),
			answer("a2", "t", outcome), user("u3", "t", labels.VerdictAcceptedWithCaveat, nil))
		for _, p := range distributions(AnswerQuestion) {
			checks := map[string]Check{"a2": {ChunkID: "a2", Question: QuestionAnswer, Probabilities: p}}
			open := scoreWith(checks, request("u0", "t"), tool("a1", "t", labels.EffectLookup, labels.ResultOK), answer("a2", "t", outcome))
			r := open.Steps[2]
			require.NotNil(t, r.QualityCheck, "%s %v", outcome, p)
			require.Less(t, r.Points, minAccepted, "%s %v", outcome, p)
			require.Less(t, r.Score, accepted.Steps[2].Score, "%s %v", outcome, p)
			require.Less(t, open.Tasks[0].Score, accepted.Tasks[0].Score, "%s %v", outcome, p)
			require.NotEqual(t, OutcomeSuccess, open.Outcome, "nobody accepted it: %v", p)
		}
	}
}

// TestBlendBoundWorkNeverAboveZero: a check on work only ever adds a cost;
// no answer of the grading model makes a step's own points positive or
// better than the labels alone.
func TestBlendBoundWorkNeverAboveZero(t *testing.T) {
	t.Parallel()
	for _, o := range WorkQuestion.Options {
		require.LessOrEqual(t, o.Points, 0.0, o.ID)
	}
	repeat := tool("a1", "t", labels.EffectChange, labels.ResultError)
	repeat.DuplicateOf = new("a0")
	works := map[string]*labels.Label{
		"lookup":   tool("a1", "t", labels.EffectLookup, labels.ResultOK),
		"change":   tool("a1", "t", labels.EffectChange, labels.ResultOK),
		"error":    tool("a1", "t", labels.EffectLookup, labels.ResultError),
		"repeat":   repeat,
		"question": msg("a1", "t", labels.TypeQuestion),
	}
	for name, w := range works {
		plain := scoreWith(nil, request("u0", "t"), w).Steps[1]
		for _, p := range distributions(WorkQuestion) {
			r := scoreWith(map[string]Check{"a1": {ChunkID: "a1", Question: QuestionWork, Probabilities: p}}, request("u0", "t"), w).Steps[1]
			require.NotNil(t, r.QualityCheck, name)
			require.LessOrEqual(t, r.Points, 0.0, "%s %v", name, p)
			require.LessOrEqual(t, r.Points, plain.Points, "%s %v", name, p)
			require.InDelta(t, plain.Points+r.QualityCheck.Points, r.Points, 1e-6, name)
			last := r.Lines[len(r.Lines)-1]
			require.Equal(t, RuleQualityCheck, last.Rule)
			require.LessOrEqual(t, last.Points, 0.0)
		}
	}
	// Credit passed back by an accepted answer still reaches checked work:
	// the check changes the step's own points only.
	checks := map[string]Check{"a1": {ChunkID: "a1", Question: QuestionWork, Probabilities: certain(WorkQuestion, "unneeded")}}
	res := scoreWith(checks, request("u0", "t"), tool("a1", "t", labels.EffectLookup, labels.ResultOK),
		answer("a2", "t", labels.OutcomeSolved), user("u3", "t", labels.VerdictConfirmed, nil))
	require.InDelta(t, -0.08, res.Steps[1].Points, 1e-9)
	require.InDelta(t, 0.24, res.Steps[1].CreditIn, 1e-9)
	require.InDelta(t, 0.16, res.Steps[1].Score, 1e-9)
	require.InDelta(t, -0.08, res.Tasks[0].Work, 1e-9)
}

// TestBlendOnlyOpenSteps: a check changes nothing on a step the labels
// decide (an answer the user reacted to, a progress note, a user message),
// nor when it asks the wrong question or is malformed.
func TestBlendOnlyOpenSteps(t *testing.T) {
	t.Parallel()
	base := []*labels.Label{request("u0", "t"), msg("a1", "t", labels.TypeProgress), answer("a2", "t", labels.OutcomeSolved),
		user("u3", "t", labels.VerdictAccepted, nil), tool("a4", "t", labels.EffectLookup, labels.ResultOK), answer("a5", "t", labels.OutcomePartial)}
	plain := scoreWith(nil, base...)
	cases := []struct {
		name  string
		check Check
	}{
		{"reacted answer", Check{ChunkID: "a2", Question: QuestionAnswer, Probabilities: certain(AnswerQuestion, "wrong")}},
		{"progress note", Check{ChunkID: "a1", Question: QuestionWork, Probabilities: certain(WorkQuestion, "harmful")}},
		{"user message", Check{ChunkID: "u3", Question: QuestionWork, Probabilities: certain(WorkQuestion, "harmful")}},
		{"answer asked the work question", Check{ChunkID: "a5", Question: QuestionWork, Probabilities: certain(WorkQuestion, "harmful")}},
		{"work asked the answer question", Check{ChunkID: "a4", Question: QuestionAnswer, Probabilities: certain(AnswerQuestion, "wrong")}},
		{"unknown question", Check{ChunkID: "a4", Question: "work_v0", Probabilities: certain(WorkQuestion, "harmful")}},
		{"malformed distribution", Check{ChunkID: "a5", Question: QuestionAnswer, Probabilities: map[string]float64{"wrong": 1}}},
		{"unknown chunk", Check{ChunkID: "zz", Question: QuestionAnswer, Probabilities: certain(AnswerQuestion, "wrong")}},
	}
	for _, c := range cases {
		got := scoreWith(map[string]Check{c.check.ChunkID: c.check}, base...)
		require.Equal(t, plain, got, c.name)
		require.Equal(t, Policy, got.Policy, c.name)
	}
	open := OpenSteps(base)
	require.Equal(t, map[string]Question{"a4": WorkQuestion, "a5": AnswerQuestion}, open)
}

// TestBlendWithoutChecksIsScore: no checks give exactly the rules' numbers.
func TestBlendWithoutChecksIsScore(t *testing.T) {
	t.Parallel()
	ls := []*labels.Label{request("u0", "t"), tool("a1", "t", labels.EffectChange, labels.ResultError), answer("a2", "t", labels.OutcomeSolved),
		request("u3", "t2"), msg("a4", "t2", labels.TypeQuestion), answer("a5", "t2", labels.OutcomeFailed)}
	require.Equal(t, score(ls...), scoreWith(nil, ls...))
	require.Equal(t, score(ls...), scoreWith(map[string]Check{}, ls...))
}

// TestBlendChecked: the numbers of a checked trace, line by line, and the
// same inputs give the same numbers every time.
func TestBlendChecked(t *testing.T) {
	t.Parallel()
	ls := []*labels.Label{request("u0", "t"), tool("a1", "t", labels.EffectLookup, labels.ResultOK), answer("a2", "t", labels.OutcomeSolved)}
	checks := map[string]Check{
		"a1": {ChunkID: "a1", Question: QuestionWork, Model: "openai/grader",
			Probabilities: map[string]float64{"advanced": 0.7, "unneeded": 0.2, "misdirected": 0.1, "harmful": 0}},
		"a2": {ChunkID: "a2", Question: QuestionAnswer, Model: "openai/grader",
			Probabilities: map[string]float64{"solves": 0.6, "partly": 0.3, "does_not": 0.1, "wrong": 0}},
	}
	res := scoreWith(checks, ls...)
	require.Equal(t, Policy+"+"+CheckPolicy, res.Policy)
	w := res.Steps[1]
	require.Equal(t, Policy+"+"+CheckPolicy, w.Policy)
	require.Equal(t, []Line{{Rule: RuleLookup, Points: -0.03}, {Rule: RuleQualityCheck, Value: QuestionWork, Points: -0.02}}, w.Lines)
	require.InDelta(t, -0.05, w.Points, 1e-9)
	require.Equal(t, "openai/grader", w.QualityCheck.Model)
	a := res.Steps[2]
	// 0.6×0.45 + 0.3×0.1 + 0.1×(−0.25) = 0.275, replacing the unreacted 0.25.
	require.Equal(t, []Line{{Rule: RuleQualityCheck, Value: QuestionAnswer, Points: 0.275}}, a.Lines)
	require.InDelta(t, 0.275, a.Points, 1e-9)
	require.InDelta(t, 0.225, res.Tasks[0].Score, 1e-9)
	require.Equal(t, OutcomePartialSuccess, res.Outcome)
	for range 50 {
		require.Equal(t, res, scoreWith(checks, ls...))
	}
}

// FuzzBlendBounds: whatever four numbers a model returns, a blend that is
// accepted lies between the question's lowest and highest option, so checked
// work stays at or below zero and a checked answer below an accepted one.
func FuzzBlendBounds(f *testing.F) {
	f.Add(0.25, 0.25, 0.25, 0.25)
	f.Add(1.0, 0.0, 0.0, 0.0)
	f.Add(0.5, 0.51, 0.0, 0.0)
	f.Fuzz(func(t *testing.T, a, b, c, d float64) {
		for _, q := range []Question{WorkQuestion, AnswerQuestion} {
			p := map[string]float64{q.Options[0].ID: a, q.Options[1].ID: b, q.Options[2].ID: c, q.Options[3].ID: d}
			got, ok := Blend(q, p)
			if !ok {
				continue
			}
			lo, hi := math.Inf(1), math.Inf(-1)
			for _, o := range q.Options {
				lo, hi = math.Min(lo, o.Points), math.Max(hi, o.Points)
			}
			require.GreaterOrEqual(t, got, lo-1e-9)
			require.LessOrEqual(t, got, hi+1e-9)
			again, _ := Blend(q, p)
			require.Equal(t, got, again)
		}
	})
}
