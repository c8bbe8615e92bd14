package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/criticml/critic/domain/feedback"
	"github.com/criticml/critic/gpuworker/extract"
	"github.com/criticml/critic/platform/llm"
)

// cmdEval is `critic eval feedback`: the built-in synthetic suite (indirect
// criticism, approval, sarcasm, a mixed outcome, abstentions, a prompt
// injection inside a comment) run against the configured
// CRITIC_FEEDBACK_MODEL, so a user can check a provider before trusting its
// findings. It calls the provider (about two calls per case), prints each
// case and the accuracy, and exits non-zero when a case fails. A small
// synthetic suite is not a production accuracy estimate.
func cmdEval(ctx context.Context, args []string) error {
	if len(args) != 1 || args[0] != "feedback" {
		return usageError{"usage: critic eval feedback"}
	}
	m, err := llm.ResolveRole(os.Getenv, llm.EnvFeedbackModel, llm.DefaultFeedbackModel)
	if err != nil {
		return err
	}
	client := llm.New(m, llm.Options{})
	passed, total := evalFeedback(ctx, client, os.Stdout)
	if passed < total {
		return fmt.Errorf("%d of %d cases failed", total-passed, total)
	}
	return nil
}

func evalFeedback(ctx context.Context, client *llm.Client, out io.Writer) (passed, total int) {
	fmt.Fprintf(out, "feedback classifier evaluation: %s (prompt %s, all criteria)\n\n", client.Model(), feedback.PromptVersion)
	x := &extract.Extractor{LLM: client}
	var usage llm.Usage
	for _, r := range x.Evaluate(ctx, feedback.EvalSuite()) {
		total++
		mark := "FAIL"
		if r.Passed {
			passed++
			mark = "ok  "
		}
		want := r.Case.Want
		if r.Case.NoPositivePair {
			want = "no positive pair"
		}
		fmt.Fprintf(out, "%s %-40s want %-17s got %s\n", mark, r.Case.Name, want, r.Got)
		usage.Add(r.Usage)
	}
	fmt.Fprintf(out, "\naccuracy: %d/%d (%.0f%%); %d call(s), %d input and %d output tokens\n", passed, total,
		100*float64(passed)/float64(max(total, 1)), usage.Calls, usage.InputTokens, usage.OutputTokens)
	return passed, total
}
