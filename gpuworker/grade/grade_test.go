package grade_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/labels"
	"github.com/criticml/critic/domain/stepscores"
	"github.com/criticml/critic/gpuworker/grade"
	"github.com/criticml/critic/gpuworker/grade/gradetest"
	"github.com/criticml/critic/platform/llm"
	"github.com/criticml/critic/platform/llm/llmtest"
)

func session() []domain.Step {
	return []domain.Step{{Role: domain.RoleUser, Content: "find invoice 7"},
		{Role: domain.RoleAssistant, ToolName: "search", ToolInput: map[string]any{"q": "7"}, ToolCallID: "c1"},
		{Role: domain.RoleTool, Content: "paid", ToolName: "search", ToolCallID: "c1"},
		{Role: domain.RoleAssistant, Content: "Invoice 7 is paid."}}
}

func newGrader(srv *llmtest.Server) *grade.Grader {
	c := llm.New(llm.Model{Provider: llm.ProviderOpenAI, Name: "grader", APIBase: srv.URL}, llm.Options{Concurrency: 4, MaxRetries: llm.NoRetries})
	return grade.New(c, labels.Limits{})
}

func open(steps []domain.Step) (map[string]stepscores.Question, []labels.Chunk) {
	chunks := labels.Chunks(steps)
	return map[string]stepscores.Question{chunks[1].ID: stepscores.WorkQuestion, chunks[2].ID: stepscores.AnswerQuestion}, chunks
}

// TestCheckAsksEachOpenStepOnce: one call per open step, the step's
// question and options in the prompt, answers bound to the options'
// schema, the model's distribution returned as it gave it.
func TestCheckAsksEachOpenStepOnce(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t)
	srv.Handle(func(r llmtest.Request) llmtest.Reply { return gradetest.Reply(r).WithUsage(40, 8) })
	steps := session()
	o, chunks := open(steps)
	res := newGrader(srv).Check(context.Background(), steps, o)
	require.NoError(t, res.Err)
	require.Empty(t, res.Failed)
	require.Equal(t, 2, srv.Calls())
	require.Equal(t, 2, res.Usage.Calls)
	require.Equal(t, 80, res.Usage.InputTokens)
	require.Len(t, res.Checks, 2)
	for _, c := range res.Checks {
		require.Equal(t, "openai/grader", c.Model)
		require.Equal(t, gradetest.Answers[c.Question], c.Probabilities)
		require.Equal(t, o[c.ChunkID].ID, c.Question)
	}
	for _, r := range srv.Requests() {
		id, q := gradetest.Target(r)
		require.Contains(t, []string{chunks[1].ID, chunks[2].ID}, id)
		for _, opt := range o[id].Options {
			require.True(t, r.Contains("- "+opt.ID+": "), "option %s of %s in the prompt", opt.ID, q)
		}
		require.True(t, r.Contains("Invoice 7 is paid."), "the context shows the trace")
	}
}

// TestCheckRejectsAnswersThatAreNotDistributions: an answer about another
// chunk or whose probabilities do not sum to one is asked once more, then
// the step is reported failed with the reason; nothing garbled comes back.
func TestCheckRejectsAnswersThatAreNotDistributions(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t)
	steps := session()
	o, chunks := open(steps)
	work, ans := chunks[1].ID, chunks[2].ID
	srv.Handle(func(r llmtest.Request) llmtest.Reply {
		id, _ := gradetest.Target(r)
		if id == work {
			return llmtest.JSON(map[string]any{"chunk_id": id, "probabilities": map[string]float64{"advanced": 0.9, "unneeded": 0.9, "misdirected": 0, "harmful": 0}})
		}
		return llmtest.JSON(map[string]any{"chunk_id": "someone-else", "probabilities": gradetest.Answers[stepscores.QuestionAnswer]})
	})
	res := newGrader(srv).Check(context.Background(), steps, o)
	require.Empty(t, res.Checks)
	require.ElementsMatch(t, []string{work, ans}, res.Failed)
	require.Error(t, res.Err)
	require.Contains(t, res.Err.Error(), "openai/grader")
	require.Equal(t, 4, srv.Calls(), "each asked twice")
}

// TestCheckSendsNothingWithoutOpenSteps: no open step, no call.
func TestCheckSendsNothingWithoutOpenSteps(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t)
	srv.Handle(gradetest.Reply)
	res := newGrader(srv).Check(context.Background(), session(), nil)
	require.Empty(t, res.Checks)
	require.Equal(t, 0, srv.Calls())
}
