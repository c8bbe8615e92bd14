package e2e

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/platform/llm/llmtest"
)

var evalEvidenceRe = regexp.MustCompile(`<evidence id="([^"]+)"`)

// TestEvalFeedbackCLI runs `critic eval feedback` against the test server:
// a careful model passes every case, a model that never commits fails the
// ones that need a verdict, and the command says so with its exit status.
func TestEvalFeedbackCLI(t *testing.T) {
	run := func(srv *llmtest.Server) (string, error) {
		cmd := exec.Command(criticBin(t), "eval", "feedback")
		cmd.Env = append(os.Environ(), "ANTHROPIC_API_KEY=", "OPENAI_API_KEY=", "CRITIC_FEEDBACK_MODEL=openai/eval-model", "CRITIC_FEEDBACK_API_BASE="+srv.URL)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	careful := llmtest.New(t)
	careful.Handle(func(req llmtest.Request) llmtest.Reply {
		in := req.Last()
		if req.SchemaName == "review" {
			return llmtest.JSON(map[string]any{"preferred": "tie", "grounded": false, "reason": "r"})
		}
		ans := map[string]any{"label": "unclear", "confidence": "low", "about": "none", "evidence_id": nil, "evidence_quote": nil, "alternative": nil, "reason": "no verdict"}
		for needle, label := range map[string]string{"say Wednesday": "negative", "Works perfectly": "positive", "whole thesis": "negative", "left out the budget": "negative"} {
			if strings.Contains(in, needle) {
				ans = map[string]any{"label": label, "confidence": "high", "about": "agent", "evidence_id": evalEvidenceRe.FindStringSubmatch(in)[1],
					"evidence_quote": needle, "alternative": nil, "reason": "reacts to the answer"}
			}
		}
		return llmtest.JSON(ans)
	})
	out, err := run(careful)
	require.NoError(t, err, out)
	for _, name := range []string{"indirect criticism", "approval", "sarcasm", "mixed outcome", "abstention: a new task", "prompt injection in a comment"} {
		require.Contains(t, out, name)
	}
	require.Contains(t, out, "accuracy: 7/7 (100%)")
	require.Contains(t, out, "openai/eval-model")

	noncommittal := llmtest.New(t)
	noncommittal.Handle(func(llmtest.Request) llmtest.Reply {
		return llmtest.JSON(map[string]any{"label": "unclear", "confidence": "low", "about": "none", "evidence_id": nil, "evidence_quote": nil, "alternative": nil, "reason": "?"})
	})
	out, err = run(noncommittal)
	require.Error(t, err)
	require.Contains(t, out, "accuracy: 3/7")
	require.Contains(t, out, "4 of 7 cases failed")

	// Without a provider it names the variable.
	cmd := exec.Command(criticBin(t), "eval", "feedback")
	cmd.Env = append(os.Environ(), "ANTHROPIC_API_KEY=", "OPENAI_API_KEY=", "CRITIC_FEEDBACK_MODEL=", "CRITIC_FEEDBACK_API_BASE=")
	b, err := cmd.CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(b), "set ANTHROPIC_API_KEY")
}
