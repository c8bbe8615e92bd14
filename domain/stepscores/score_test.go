package stepscores

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain/labels"
)

// Builders of labels for one chunk each; the chunk id is the argument.
func tool(id, task, effect, result string) *labels.Label {
	return &labels.Label{ChunkID: id, TaskID: task, Actor: labels.ActorAgent, Type: labels.TypeToolCall, Effect: effect, Result: result,
		IsOutput: new(false), Outcome: labels.OutcomeNone, Stance: labels.StanceNone, Coverage: labels.CoverageNone}
}

func answer(id, task, outcome string) *labels.Label {
	return &labels.Label{ChunkID: id, TaskID: task, Actor: labels.ActorAgent, Type: labels.TypeAnswer, Effect: labels.EffectNone,
		Result: labels.ResultNone, IsOutput: new(true), Outcome: outcome, Stance: labels.StanceConfident, Coverage: labels.CoverageFull}
}

func msg(id, task, typ string) *labels.Label {
	l := answer(id, task, labels.OutcomeNone)
	l.Type, l.IsOutput = typ, new(false)
	return l
}

func user(id, task, verdict string, target *string) *labels.Label {
	return &labels.Label{ChunkID: id, TaskID: task, Actor: labels.ActorUser, Intent: labels.IntentFeedback, Verdict: verdict,
		VerdictTarget: target, Sentiment: labels.SentimentNeutral}
}

func request(id, task string) *labels.Label {
	l := user(id, task, labels.VerdictNone, nil)
	l.Intent = labels.IntentRequest
	return l
}

func score(ls ...*labels.Label) Result {
	return Score(make([]labels.Chunk, len(ls)), ls)
}

func TestWorkCosts(t *testing.T) {
	t.Parallel()
	repeat := tool("a5", "t", labels.EffectChange, labels.ResultError)
	repeat.DuplicateOf = new("a2")
	cases := []struct {
		name  string
		label *labels.Label
		want  float64
		rules []string
	}{
		{"lookup", tool("a1", "t", labels.EffectLookup, labels.ResultOK), -0.03, []string{RuleLookup}},
		{"change", tool("a2", "t", labels.EffectChange, labels.ResultOK), -0.05, []string{RuleChange}},
		{"question", msg("a3", "t", labels.TypeQuestion), -0.05, []string{RuleQuestion}},
		{"lookup with error", tool("a4", "t", labels.EffectLookup, labels.ResultError), -0.13, []string{RuleLookup, RuleError}},
		{"empty result is no error", tool("a6", "t", labels.EffectLookup, labels.ResultEmpty), -0.03, []string{RuleLookup}},
		{"repeated failing change", repeat, -0.25, []string{RuleChange, RuleError, RuleRepeat}},
		{"progress message", msg("a7", "t", labels.TypeProgress), 0, nil},
	}
	for _, c := range cases {
		r := score(request("u0", "t"), c.label).Steps[1]
		require.Equal(t, "work", r.Kind, c.name)
		require.InDelta(t, c.want, r.Points, 1e-9, c.name)
		require.InDelta(t, c.want, r.Score, 1e-9, c.name)
		var rules []string
		for _, l := range r.Lines {
			rules = append(rules, l.Rule)
		}
		require.Equal(t, c.rules, rules, c.name)
		require.LessOrEqual(t, r.Points, 0.0, "work never scores above zero")
	}
	require.Nil(t, score(request("u0", "t")).Steps[0], "user chunks have no breakdown")
}

func TestReactionPoints(t *testing.T) {
	t.Parallel()
	cases := []struct {
		verdict string
		want    float64
	}{
		{labels.VerdictConfirmed, 1}, {labels.VerdictAccepted, 0.75}, {labels.VerdictAcceptedWithCaveat, 0.5},
		{labels.VerdictPartlyRejected, -0.5}, {labels.VerdictRejected, -0.75}, {labels.VerdictRejectedConfident, -1},
		// No readable reaction: the answer earns its unreacted points.
		{labels.VerdictUnclear, 0.25}, {labels.VerdictNone, 0.25},
	}
	for _, c := range cases {
		res := score(request("u0", "t"), answer("a1", "t", labels.OutcomeSolved), user("u2", "t", c.verdict, nil))
		r := res.Steps[1]
		require.Equal(t, "answer", r.Kind)
		require.InDelta(t, c.want, r.Points, 1e-9, c.verdict)
		require.InDelta(t, c.want, *res.Tasks[0].AnswerPoints, 1e-9, c.verdict)
		if _, ok := ReactionPoints[c.verdict]; ok {
			require.Equal(t, "u2", r.ReactedBy)
			require.Equal(t, RuleReaction, r.Lines[0].Rule)
		} else {
			require.Empty(t, r.ReactedBy)
			require.Equal(t, RuleUnreacted, r.Lines[0].Rule)
		}
	}
	// Every verdict but unclear/none is in the table, within ±1.
	for _, v := range []string{labels.VerdictUnclear, labels.VerdictNone} {
		_, ok := ReactionPoints[v]
		require.False(t, ok)
	}
	require.Len(t, ReactionPoints, 6)
}

func TestUnreactedAnswers(t *testing.T) {
	t.Parallel()
	for outcome, want := range map[string]float64{labels.OutcomeSolved: 0.25, labels.OutcomeNone: 0.25, labels.OutcomePartial: 0.1,
		labels.OutcomeNotFound: -0.25, labels.OutcomeFailed: -0.5} {
		r := score(request("u0", "t"), answer("a1", "t", outcome)).Steps[1]
		require.InDelta(t, want, r.Points, 1e-9, outcome)
		require.Equal(t, outcome, r.Lines[0].Value)
	}
}

// TestBounds: an unconfirmed answer never beats an accepted one, every
// table stays within ±1, work never scores above zero.
func TestBounds(t *testing.T) {
	t.Parallel()
	minAccepted := math.Inf(1)
	for _, v := range []string{labels.VerdictConfirmed, labels.VerdictAccepted, labels.VerdictAcceptedWithCaveat} {
		minAccepted = math.Min(minAccepted, ReactionPoints[v])
	}
	for o, p := range UnreactedPoints {
		require.Less(t, p, minAccepted, o)
		require.True(t, labels.Allowed("outcome", o))
	}
	for v, p := range ReactionPoints {
		require.True(t, labels.Allowed("verdict", v))
		require.LessOrEqual(t, math.Abs(p), 1.0)
	}
	for _, c := range []float64{CostLookup, CostChange, CostQuestion, CostError, CostRepeat} {
		require.Less(t, c, 0.0)
	}
	require.Equal(t, 1.0, ReactionPoints[labels.VerdictConfirmed])
	require.Equal(t, -1.0, ReactionPoints[labels.VerdictRejectedConfident])
}

func TestCreditFlowsBack(t *testing.T) {
	t.Parallel()
	res := score(
		request("u0", "t1"),
		tool("a1", "t1", labels.EffectLookup, labels.ResultOK),
		msg("a2", "t1", labels.TypeProgress),
		tool("a3", "t1", labels.EffectChange, labels.ResultOK),
		answer("a4", "t1", labels.OutcomeSolved),
		user("u5", "t1", labels.VerdictConfirmed, new("a4")),
		request("u6", "t2"),
		tool("a7", "t2", labels.EffectLookup, labels.ResultOK),
		answer("a8", "t2", labels.OutcomeSolved),
		user("u9", "t2", labels.VerdictRejectedConfident, nil),
	)
	// t1: 0.3 × 1.0 × 0.8^k to the agent step k places before a4.
	a3, a2, a1 := res.Steps[3], res.Steps[2], res.Steps[1]
	require.InDelta(t, 0.24, a3.CreditIn, 1e-9)
	require.InDelta(t, -0.05+0.24, a3.Score, 1e-9)
	require.InDelta(t, 0.192, a2.CreditIn, 1e-9)
	require.InDelta(t, 0.1536, a1.CreditIn, 1e-9)
	require.InDelta(t, -0.03+0.1536, a1.Score, 1e-9)
	last := a1.Lines[len(a1.Lines)-1]
	require.Equal(t, Line{Rule: RuleCreditBack, Points: 0.1536, FromChunk: "a4", K: 3}, last)
	// t2's rejection flows back within t2 only (its reaction names no
	// target: it is about the latest answer, a8).
	a7 := res.Steps[7]
	require.InDelta(t, 0.3*-1*0.8, a7.CreditIn, 1e-9)
	require.InDelta(t, -0.03-0.24, a7.Score, 1e-9)
	require.InDelta(t, 0.24, a3.CreditIn, 1e-9, "no credit crosses into another task")
	require.Equal(t, "u9", res.Steps[8].ReactedBy)
	// Unreacted answers pass nothing back.
	r := score(request("u0", "t"), tool("a1", "t", labels.EffectLookup, labels.ResultOK), answer("a2", "t", labels.OutcomeSolved))
	require.Zero(t, r.Steps[1].CreditIn)
}

func TestReactionTargets(t *testing.T) {
	t.Parallel()
	// An explicit target wins over the latest answer; a later reaction to
	// the same answer replaces an earlier one; a target that comes after the
	// reaction (or is not an answer) is ignored.
	res := score(
		request("u0", "t"),
		answer("a1", "t", labels.OutcomeSolved),
		answer("a2", "t", labels.OutcomeSolved),
		user("u3", "t", labels.VerdictRejected, new("a1")),
		user("u4", "t", labels.VerdictConfirmed, new("a1")),
		user("u5", "t", labels.VerdictRejectedConfident, new("a6")),
		answer("a6", "t", labels.OutcomeSolved),
	)
	require.InDelta(t, 1.0, res.Steps[1].Points, 1e-9)
	require.Equal(t, "u4", res.Steps[1].ReactedBy)
	require.InDelta(t, 0.25, res.Steps[2].Points, 1e-9, "a2 got no reaction")
	require.InDelta(t, 0.25, res.Steps[6].Points, 1e-9, "a reaction cannot name a later answer")
	// Nothing precedes a1 in the task, so its reaction passes nothing back.
	require.Zero(t, res.Steps[1].CreditIn)
}

func TestCapsAndTaskScores(t *testing.T) {
	t.Parallel()
	// Two confirmed answers in a row: the first gets 0.24 back on top of its
	// own 1.0 and is capped at +1.
	res := score(request("u0", "t"), answer("a1", "t", labels.OutcomeSolved), user("u2", "t", labels.VerdictConfirmed, nil),
		answer("a3", "t", labels.OutcomeSolved), user("u4", "t", labels.VerdictConfirmed, nil))
	require.Equal(t, 1.0, res.Steps[1].Score)
	require.True(t, res.Steps[1].Capped)
	require.InDelta(t, 1.24, res.Steps[1].Points+res.Steps[1].CreditIn, 1e-9)
	require.Equal(t, 2, res.Steps[1].Credit)
	require.Equal(t, "a3", res.Tasks[0].AnswerChunk, "the task's final answer")
	require.Equal(t, 1.0, res.Tasks[0].Score)

	// A confidently rejected answer after failing work: −1 − 0.25 capped to −1.
	rep := tool("a2", "t", labels.EffectChange, labels.ResultError)
	rep.DuplicateOf = new("a1")
	res = score(request("u0", "t"), tool("a1", "t", labels.EffectChange, labels.ResultError), rep,
		answer("a3", "t", labels.OutcomeSolved), user("u4", "t", labels.VerdictRejectedConfident, nil))
	ts := res.Tasks[0]
	require.InDelta(t, -0.15-0.25, ts.Work, 1e-9)
	require.InDelta(t, -1.0, *ts.AnswerPoints, 1e-9)
	require.Equal(t, -1.0, ts.Score)
	require.True(t, ts.Capped)
	require.InDelta(t, -0.25-0.24, res.Steps[2].Score, 1e-9, "own −0.25 plus 0.3 × −1 × 0.8 passed back")
	require.False(t, res.Steps[2].Capped)

	// Uncapped: answer points plus work.
	res = score(request("u0", "t"), tool("a1", "t", labels.EffectLookup, labels.ResultOK), answer("a2", "t", labels.OutcomeSolved),
		user("u3", "t", labels.VerdictAccepted, nil))
	require.InDelta(t, 0.72, res.Tasks[0].Score, 1e-9)
	require.False(t, res.Tasks[0].Capped)
	require.Equal(t, 0, res.Tasks[0].FirstChunk)
	require.Equal(t, 3, res.Tasks[0].LastChunk)
	// A task without an answer scores its work alone.
	res = score(request("u0", "t"), tool("a1", "t", labels.EffectChange, labels.ResultOK))
	require.Nil(t, res.Tasks[0].AnswerPoints)
	require.InDelta(t, -0.05, res.Tasks[0].Score, 1e-9)
}

func TestTraceScoreAndOutcome(t *testing.T) {
	t.Parallel()
	task := func(id, verdict, outcome string) []*labels.Label {
		out := []*labels.Label{request("u"+id, id), tool("l"+id, id, labels.EffectLookup, labels.ResultOK), answer("a"+id, id, outcome)}
		if verdict != "" {
			out = append(out, user("r"+id, id, verdict, nil))
		}
		return out
	}
	cat := func(ts ...[]*labels.Label) []*labels.Label {
		var out []*labels.Label
		for _, t := range ts {
			out = append(out, t...)
		}
		return out
	}
	cases := []struct {
		name    string
		ls      []*labels.Label
		outcome string
		trace   float64
	}{
		{"accepted", cat(task("1", labels.VerdictConfirmed, labels.OutcomeSolved)), OutcomeSuccess, 0.97},
		{"exactly 0.5 is success", cat(task("1", labels.VerdictAcceptedWithCaveat, labels.OutcomeSolved)), OutcomeSuccess, 0.47},
		{"nobody reacted", cat(task("1", "", labels.OutcomeSolved)), OutcomePartialSuccess, 0.22},
		{"rejected", cat(task("1", labels.VerdictRejected, labels.OutcomeSolved)), OutcomeFailure, -0.78},
		{"not found", cat(task("1", "", labels.OutcomeNotFound)), OutcomeFailure, -0.28},
		{"mean of tasks", cat(task("1", labels.VerdictConfirmed, labels.OutcomeSolved), task("2", labels.VerdictRejectedConfident, labels.OutcomeSolved)),
			OutcomePartialSuccess, (0.97 + -1.0) / 2},
		{"no answer", []*labels.Label{request("u", "t"), tool("l", "t", labels.EffectLookup, labels.ResultOK)}, OutcomeInsufficientEvidence, -0.03},
	}
	for _, c := range cases {
		res := score(c.ls...)
		require.Equal(t, c.outcome, res.Outcome, c.name)
		require.NotNil(t, res.TraceScore, c.name)
		require.InDelta(t, c.trace, *res.TraceScore, 1e-6, c.name)
	}
	empty := score()
	require.Nil(t, empty.TraceScore)
	require.Equal(t, OutcomeInsufficientEvidence, empty.Outcome)
	// Unlabeled chunks score nothing and break nothing.
	res := score(nil, request("u0", "t"), nil, answer("a1", "t", labels.OutcomeSolved))
	require.Nil(t, res.Steps[0])
	require.Nil(t, res.Steps[2])
	require.InDelta(t, 0.25, res.Steps[3].Score, 1e-9)
}

func TestOrdinalCredit(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		score float64
		want  int
	}{{-1, -2}, {-0.76, -2}, {-0.75, -1}, {-0.5, -1}, {-0.26, -1}, {-0.25, 0}, {0, 0}, {0.25, 0}, {0.26, 1}, {0.75, 1}, {0.76, 2}, {1, 2}} {
		require.Equal(t, c.want, OrdinalCredit(c.score), "%v", c.score)
	}
}

func TestExpectedCredit(t *testing.T) {
	t.Parallel()
	// The spec's example.
	v, ok := ExpectedCredit(map[string]float64{"negative": 0.1, "neutral": 0.2, "positive": 0.6, "strongly_positive": 0.1})
	require.True(t, ok)
	require.InDelta(t, 0.35, v, 1e-9)
	// insufficient_evidence mass is excluded, the rest renormalised.
	v, ok = ExpectedCredit(map[string]float64{"positive": 0.3, "strongly_negative": 0.1, InsufficientEvidence: 0.6})
	require.True(t, ok)
	require.InDelta(t, (0.3*0.5-0.1)/0.4, v, 1e-9)
	v, ok = ExpectedCredit(map[string]float64{"strongly_positive": 1})
	require.True(t, ok)
	require.Equal(t, 1.0, v)
	v, ok = ExpectedCredit(map[string]float64{"strongly_negative": 0.5})
	require.True(t, ok)
	require.Equal(t, -1.0, v, "a partial distribution is renormalised")
	for name, p := range map[string]map[string]float64{
		"empty":             {},
		"only abstention":   {InsufficientEvidence: 1},
		"unknown label":     {"positive": 0.5, "great": 0.5},
		"negative mass":     {"positive": 1.2, "negative": -0.2},
		"above one":         {"positive": 0.7, "neutral": 0.7},
		"not a number":      {"positive": math.NaN()},
		"infinite":          {"positive": math.Inf(1)},
		"zero substantive":  {"positive": 0, InsufficientEvidence: 0.5},
		"single above one":  {"positive": 1.5},
		"negative abstains": {"positive": 0.5, InsufficientEvidence: -0.1},
	} {
		_, ok := ExpectedCredit(p)
		require.False(t, ok, name)
	}
}

// Score applies the rules to a labeled trace: chunks in trace order and
// their labels (nil = unlabeled, which scores nothing).
func Score(chunks []labels.Chunk, ls []*labels.Label) Result {
	return ScoreWith(chunks, ls, nil)
}
