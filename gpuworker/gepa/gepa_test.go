package gepa

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The end-to-end check through the offline CLI: a reward model that
// prefers checking the order, a task model that follows its skill, and a
// reflection model that proposes checking the order → the best skill beats
// the seed, has valid frontmatter, the budget holds, and a second run gives
// the same result.
func TestCLIImprovesOnTheSeedWithinBudgetDeterministically(t *testing.T) {
	dir := trainedModel(t)
	s := newServers(t)
	tmp := t.TempDir()
	exPath := filepath.Join(tmp, "gepa_examples.jsonl")
	var b bytes.Buffer
	for _, ex := range examples(5) {
		line, _ := json.Marshal(ex)
		b.Write(append(line, '\n'))
	}
	require.NoError(t, os.WriteFile(exPath, b.Bytes(), 0o644))
	env := func(k string) string {
		if k == "OPENAI_BASE_URL" {
			return s.refl.URL
		}
		return ""
	}
	runCLI := func(out string) (Result, string) {
		var stdout, stderr bytes.Buffer
		require.NoError(t, CLI(context.Background(), []string{"--model", dir, "--examples", exPath,
			"--task-model", "openai/task", "--task-api-base", s.task.URL, "--reflection-model", "openai/reflection",
			"--max-metric-calls", "20", "--out", out}, env, &stdout, &stderr), stderr.String())
		data, err := os.ReadFile(filepath.Join(out, "result.json"))
		require.NoError(t, err)
		var res Result
		require.NoError(t, json.Unmarshal(data, &res))
		var raw map[string]any
		require.NoError(t, json.Unmarshal(data, &raw))
		for _, k := range []string{"skill_name", "skill_description", "best_skill", "best_score", "seed_skill", "seed_score", "candidates", "holdout"} {
			require.Contains(t, raw, k)
		}
		return res, string(data)
	}
	before := s.task.Calls()
	res, raw1 := runCLI(filepath.Join(tmp, "out1"))
	require.Equal(t, "refund-policy", res.SkillName)
	require.Greater(t, res.BestScore, res.SeedScore)
	require.Contains(t, res.BestSkill, "check the order")
	require.Contains(t, res.BestSkill, "```bash\nlookup_order 1182\n```", "a body with its own code fence survives")
	id, body, err := ParseFrontmatter(res.BestSkill)
	require.NoError(t, err)
	require.Equal(t, Identity{Name: "refund-policy", Description: "Use when a customer asks for a refund, return, or exchange."}, id)
	require.True(t, strings.HasPrefix(body, checkBody))
	require.Equal(t, Render(id, id.Description), res.SeedSkill, "the description is the seed body")
	require.LessOrEqual(t, res.MetricCalls, 20)
	require.Equal(t, res.MetricCalls, s.task.Calls()-before, "every task call is a counted metric call")
	require.Nil(t, res.Holdout, "5 examples are too few to hold any out")
	require.GreaterOrEqual(t, len(res.Candidates), 2)
	require.Equal(t, res.SeedSkill, res.Candidates[0].Skill)

	res2, raw2 := runCLI(filepath.Join(tmp, "out2"))
	require.Equal(t, raw1, raw2, "same inputs and replies → same result")
	require.Equal(t, res, res2)
}

// The task call carries the example's own system prompt, a blank line and
// the skill block; a trace without one gets the block alone.
func TestTaskSystemMessage(t *testing.T) {
	s := newServers(t)
	exs := examples(2)
	_, err := Optimize(context.Background(), s.config(t, exs, 8))
	require.NoError(t, err)
	var withSys, without int
	for _, req := range s.task.Requests() {
		sys := req.Messages[0].Content
		require.Equal(t, "system", req.Messages[0].Role)
		require.Equal(t, "user", req.Messages[1].Role)
		if strings.HasPrefix(sys, "You are the support agent of a web shop.\n\n<skill name=\"refund-policy\">\n---\nname: refund-policy\n") {
			withSys++
		} else {
			require.True(t, strings.HasPrefix(sys, "<skill name=\"refund-policy\">\n---\n"), sys)
			without++
		}
		require.True(t, strings.HasSuffix(sys, "\n</skill>"))
	}
	require.Positive(t, withSys)
	require.Positive(t, without)
}

// Reflection sees the score inside the feedback, the reviewers' comments,
// and the body inside tags.
func TestReflectionPromptCarriesScoreAndFeedback(t *testing.T) {
	s := newServers(t)
	_, err := Optimize(context.Background(), s.config(t, examples(3), 12))
	require.NoError(t, err)
	var prompt string
	for _, req := range s.refl.Requests() {
		if strings.Contains(req.Last(), "<current_skill_body>") {
			prompt = req.Last()
			break
		}
	}
	require.NotEmpty(t, prompt)
	require.Contains(t, prompt, "<feedback>\nScore: 0.")
	require.Contains(t, prompt, "- promised a refund without checking the order")
	require.Contains(t, prompt, "<reply>\n"+promisedReply)
	require.Contains(t, prompt, "Return only the body between the two tags")
}

// Evaluating a candidate's examples concurrently changes nothing: one at a
// time and eight at a time give the same result.
func TestConcurrencyDoesNotChangeTheResult(t *testing.T) {
	var results []*Result
	for _, conc := range []int{1, 8} {
		s := newServers(t)
		s.task.SetLatency(20 * time.Millisecond) // so calls overlap when they may
		cfg := s.config(t, examples(6), 24)
		cfg.Concurrency = conc
		res, err := Optimize(context.Background(), cfg)
		require.NoError(t, err)
		results = append(results, res)
		if conc == 8 {
			require.Greater(t, s.task.MaxInFlight(), 1, "examples were evaluated concurrently")
		}
	}
	require.Equal(t, results[0], results[1])
}

// Minibatches hold distinct examples, and every example is drawn once per
// epoch.
func TestMinibatchesAreEpochShuffled(t *testing.T) {
	r := &run{search: make([]Example, 7), rng: newRNG(0)}
	counts := make([]int, 7)
	for range 14 { // 42 draws = 6 epochs
		ids := r.minibatch(3)
		require.Len(t, ids, 3)
		seen := map[int]bool{}
		for _, k := range ids {
			require.False(t, seen[k], "distinct within a minibatch: %v", ids)
			seen[k] = true
			counts[k]++
		}
	}
	for k, n := range counts {
		require.InDelta(t, 6, n, 1, "example %d is drawn about once per epoch", k)
	}
	small := &run{search: make([]Example, 2), rng: newRNG(0)}
	require.ElementsMatch(t, []int{0, 1}, small.minibatch(2))
}
