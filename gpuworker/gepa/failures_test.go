package gepa

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/platform/llm/llmtest"
)

func TestNoExamplesFails(t *testing.T) {
	s := newServers(t)
	exs := []Example{{TraceID: "a"}, {TraceID: "b", Messages: []Message{}}}
	_, err := Optimize(context.Background(), s.config(t, exs, 40))
	require.ErrorIs(t, err, ErrNoExamples)
	require.Zero(t, s.task.Calls())
	require.Zero(t, s.refl.Calls())
}

// One example's request rejected by the task model scores 0 and its error
// reaches reflection; the run goes on.
func TestTaskModelRejectingOneExampleScoresItZero(t *testing.T) {
	s := newServers(t)
	exs := examples(3)
	bad := exs[1].Messages[0].Content
	s.task.On(func(r llmtest.Request) bool { return r.Last() == bad },
		llmtest.Reply{Status: 400, Message: "This model's maximum context length is exceeded"}).Sticky = true
	res, err := Optimize(context.Background(), s.config(t, exs, 12))
	require.NoError(t, err)
	require.Less(t, res.SeedScore, 0.5)
	var saw bool
	for _, req := range s.refl.Requests() {
		if strings.Contains(req.Last(), "<reply_error>") && strings.Contains(req.Last(), "maximum context length") &&
			strings.Contains(req.Last(), "Score: 0.000") {
			saw = true
		}
	}
	require.True(t, saw, "the rejection reaches the reflection model as feedback with score 0")
}

// Authentication, rate-limit and connection errors fail the run.
func TestTaskModelFatalErrorsFailTheRun(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply *llmtest.Reply
		want  string
	}{
		{"auth", &llmtest.Reply{Status: 401, Message: "invalid api key"}, "HTTP 401"},
		{"rate limit", &llmtest.Reply{Status: 429, Message: "slow down"}, "HTTP 429"},
		{"connection", nil, "unreachable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServers(t)
			cfg := s.config(t, examples(3), 12)
			if tc.reply != nil {
				s.task.Handle(func(llmtest.Request) llmtest.Reply { return *tc.reply })
			} else {
				cfg.Task = client(llmtest.DeadURL(t), "task")
			}
			_, err := Optimize(context.Background(), cfg)
			var te *TaskError
			require.ErrorAs(t, err, &te)
			require.Contains(t, err.Error(), tc.want)
			require.Contains(t, err.Error(), "task model: openai/task")
		})
	}
}

// Any reflection-model error fails the run: at naming time and mid-search.
func TestReflectionErrorsFailTheRun(t *testing.T) {
	t.Run("naming", func(t *testing.T) {
		s := newServers(t)
		s.refl.Handle(func(llmtest.Request) llmtest.Reply { return llmtest.Reply{Status: 403, Message: "forbidden"} })
		_, err := Optimize(context.Background(), s.config(t, examples(3), 12))
		var re *ReflectionError
		require.ErrorAs(t, err, &re)
		require.Contains(t, err.Error(), "HTTP 403")
		require.Zero(t, s.task.Calls())
	})
	t.Run("invalid name", func(t *testing.T) {
		s := newServers(t)
		s.refl.Handle(func(llmtest.Request) llmtest.Reply {
			return llmtest.Reply{Content: "<name>Refund Policy!</name><description>Use for refunds.</description>"}
		})
		_, err := Optimize(context.Background(), s.config(t, examples(3), 12))
		var re *ReflectionError
		require.ErrorAs(t, err, &re)
		require.Contains(t, err.Error(), "lowercase letters, digits or hyphens")
	})
	t.Run("proposal", func(t *testing.T) {
		s := newServers(t)
		s.refl.On(func(r llmtest.Request) bool { return strings.Contains(r.Last(), "<current_skill_body>") },
			llmtest.Reply{Status: 500, Message: "overloaded"}).Sticky = true
		_, err := Optimize(context.Background(), s.config(t, examples(3), 12))
		var re *ReflectionError
		require.ErrorAs(t, err, &re)
		require.Contains(t, err.Error(), "HTTP 500")
	})
}

// A budget that cannot pay for the seed and one proposal fails, saying so,
// before any model is called.
func TestBudgetTooSmallForReflectionFails(t *testing.T) {
	s := newServers(t)
	_, err := Optimize(context.Background(), s.config(t, examples(5), 7))
	require.ErrorIs(t, err, ErrBudget)
	require.Contains(t, err.Error(), "ran out while evaluating the seed skill")
	require.Contains(t, err.Error(), "at least 8")
	require.Zero(t, s.refl.Calls(), "the reflection model was never called")
	require.Zero(t, s.task.Calls(), "no metric call was wasted")
}

// Empty, identical, malformed and repeated proposals are rejected before a
// metric call is spent, and rejected bodies are shown to later reflection.
func TestUnusableProposalsCostNoMetricCalls(t *testing.T) {
	s := newServers(t)
	seedDesc := "Use when a customer asks for a refund, return, or exchange."
	answers := []string{
		openBody + "\n" + seedDesc + "\n" + closeBody,  // identical to the parent
		openBody + "  \n" + closeBody,                  // empty
		"I think the agent should check the order.",    // no block: never adopted verbatim
		openBody + "\nBe polite.\n" + closeBody,        // evaluated, loses the gate
		openBody + "\nBe polite.\n" + closeBody,        // already tried
		openBody + "\n" + checkBody + "\n" + closeBody, // the good one
	}
	var n int
	s.refl.Handle(func(r llmtest.Request) llmtest.Reply {
		if strings.Contains(r.Last(), "You are naming a skill") {
			return reflect(r)
		}
		if n >= len(answers) {
			return reflect(r)
		}
		n++
		return llmtest.Reply{Content: answers[n-1]}
	})
	var reports []CandidateReport
	cfg := s.config(t, examples(3), 9)
	cfg.OnCandidate = func(c CandidateReport) { reports = append(reports, c) }
	res, err := Optimize(context.Background(), cfg)
	require.NoError(t, err)
	// seed 3 + "Be polite." 3 + the good one 3 = 9; the four others were free.
	require.Equal(t, 9, res.MetricCalls)
	require.Equal(t, 9, s.task.Calls())
	require.Len(t, reports, 2)
	require.False(t, reports[0].Accepted)
	require.True(t, reports[1].Accepted)
	require.Greater(t, res.BestScore, res.SeedScore)
	require.NotContains(t, res.BestSkill, "I think the agent")
	var shown bool
	for _, r := range s.refl.Requests() {
		if strings.Contains(r.Last(), "<rejected reason=\"already tried\">\nBe polite.") ||
			strings.Contains(r.Last(), "<rejected reason=\"scored") && strings.Contains(r.Last(), "Be polite.") {
			shown = true
		}
	}
	require.True(t, shown, "rejected proposals are shown to the reflection model")
}

// With at least 8 examples a fifth is held out by trace: search never sees
// them, and the result reports the seed's and the best skill's held-out
// scores; the budget, reserve included, is never exceeded.
func TestHoldoutAndHardBudget(t *testing.T) {
	s := newServers(t)
	exs := examples(10)
	res, err := Optimize(context.Background(), s.config(t, exs, 30))
	require.NoError(t, err)
	require.NotNil(t, res.Holdout)
	require.Equal(t, 2, res.Holdout.Examples)
	require.Greater(t, res.Holdout.BestScore, res.Holdout.SeedScore)
	require.LessOrEqual(t, res.MetricCalls, 30)
	require.Equal(t, res.MetricCalls, s.task.Calls())
	for budget := 14; budget <= 22; budget++ {
		s := newServers(t)
		res, err := Optimize(context.Background(), s.config(t, exs, budget))
		if errors.Is(err, ErrBudget) {
			require.Less(t, budget, 8+3+4)
			continue
		}
		require.NoError(t, err)
		require.LessOrEqual(t, s.task.Calls(), budget)
		require.Equal(t, res.MetricCalls, s.task.Calls())
	}
}

// The best candidate by mean keeps selection weight even when it is the
// sole winner of no example (the reference's pruning gives it zero mass).
func TestParentSelectionCanAlwaysDrawTheBest(t *testing.T) {
	r := &run{search: make([]Example, 2)}
	mk := func(a, b float64) *candidate { return &candidate{evals: []eval{{score: a}, {score: b}}} }
	r.pool = []*candidate{mk(0.6, 0.6), mk(0.9, 0.1), mk(0.1, 0.9)}
	require.Equal(t, 0, r.bestIndex())
	for seed := range uint64(200) {
		r.rng = newRNG(seed)
		if r.selectParent() == 0 {
			return
		}
	}
	t.Fatal("the best candidate by mean was never drawn")
}

func TestExtractBody(t *testing.T) {
	body, err := extractBody("Sure.\n" + openBody + "\nStep 1.\n```bash\nls\n```\n" + closeBody + "\nHope this helps!")
	require.NoError(t, err)
	require.Equal(t, "Step 1.\n```bash\nls\n```", body)
	_, err = extractBody("```\nno tags\n```")
	require.ErrorIs(t, err, errNoBody)
	_, err = extractBody(openBody + "\ntruncated")
	require.ErrorIs(t, err, errNoBody)
}

func TestFrontmatterRoundTrips(t *testing.T) {
	for _, d := range []string{"Use when a customer asks for a refund.", "Use when: the user says \"refund\" # now", "- lists"} {
		id := Identity{Name: "x-1", Description: d}
		got, body, err := ParseFrontmatter(Render(id, "body"))
		require.NoError(t, err)
		require.Equal(t, id, got)
		require.Equal(t, "body", body)
	}
	require.Error(t, Identity{Name: strings.Repeat("a", 65), Description: "d"}.Validate())
	require.Error(t, Identity{Name: "a", Description: strings.Repeat("d", 1025)}.Validate())
}
