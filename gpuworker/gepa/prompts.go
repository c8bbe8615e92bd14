package gepa

import (
	"fmt"
	"strings"
)

// PromptVersion names the prompts below; it is recorded with a run so a
// changed prompt is visible in results.
const PromptVersion = "gepa-v1"

// identityPrompt asks for the skill's name and description from the
// examples and their feedback (spec 004: the reflection model writes both).
func identityPrompt(exs []Example) string {
	var b strings.Builder
	b.WriteString(`You are naming a skill for an AI agent. A skill is a SKILL.md file the agent loads into its context: YAML frontmatter with a name and a description, then Markdown instructions.

Below are conversations the agent had (the input it was given) and what reviewers said about its replies. Choose:
- a name: 1 to 64 characters, only lowercase letters, digits and hyphens (for example refund-policy);
- a description: one line, at most 1024 characters, that says when the agent should use the skill (for example "Use when a customer asks for a refund, return, or exchange.").

Answer with exactly these two blocks and nothing else:
<name>the-name</name>
<description>Use when …</description>

`)
	for i, ex := range exs {
		fmt.Fprintf(&b, "# Example %d\n## Input\n%s\n", i+1, renderInput(ex))
		if len(ex.Feedback) > 0 {
			b.WriteString("## Reviewer feedback\n")
			for _, f := range ex.Feedback {
				b.WriteString("- " + oneLine(f) + "\n")
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// record is one minibatch example as the reflection model sees it.
type record struct {
	ex     Example
	reply  string
	score  float64
	errMsg string // the task model rejected the request
}

// rejection is a proposal that did not survive, remembered so reflection
// does not propose it again (the reference forgets them, gepa-ai/gepa#379).
type rejection struct {
	body   string
	reason string
}

// reflectionPrompt asks for a better body. The current body and every
// example sit inside XML-style tags rather than ``` fences, so bodies with
// code blocks cannot break the framing; the score is written into each
// example's feedback (the reference omits it, gepa-ai/gepa#288).
func reflectionPrompt(id Identity, current string, recs []record, rejected []rejection) string {
	var b strings.Builder
	fmt.Fprintf(&b, `You are improving a skill for an AI agent. The skill is a SKILL.md file the agent loads into its system message. Its frontmatter is fixed:
name: %s
description: %s

You write only its body: the Markdown instructions after the frontmatter.

The current body:
<current_skill_body>
%s
</current_skill_body>

The agent ran with this skill on the examples below. Each shows the input, the agent's reply, the reply's score (0 to 1 from a reward model trained on reviewers' preferences; 0.5 is average, higher is better) and what reviewers said about the original conversation.

`, id.Name, id.Description, current)
	for i, r := range recs {
		fmt.Fprintf(&b, "<example number=\"%d\">\n<input>\n%s\n</input>\n", i+1, renderInput(r.ex))
		if r.errMsg != "" {
			fmt.Fprintf(&b, "<reply_error>\nThe model provider rejected this request: %s\n</reply_error>\n", r.errMsg)
		} else {
			fmt.Fprintf(&b, "<reply>\n%s\n</reply>\n", r.reply)
		}
		fmt.Fprintf(&b, "<feedback>\nScore: %.3f\n", r.score)
		for _, f := range r.ex.Feedback {
			b.WriteString("- " + oneLine(f) + "\n")
		}
		b.WriteString("</feedback>\n</example>\n\n")
	}
	if len(rejected) > 0 {
		b.WriteString("These bodies were already proposed and rejected; do not propose them again or anything equivalent:\n")
		for _, r := range rejected {
			fmt.Fprintf(&b, "<rejected reason=%q>\n%s\n</rejected>\n", r.reason, r.body)
		}
		b.WriteString("\n")
	}
	b.WriteString(`Write a new body that would make the agent's replies better on inputs like these. Read the feedback carefully and put every concrete, domain-specific fact and rule it implies into the body; the agent will not see this feedback later. Keep what already works. Do not copy the examples' specifics (names, order numbers) into the body, and do not change the agent's task.

Return only the body between the two tags below, with nothing after the closing tag. The body may contain Markdown and code blocks.
` + openBody + `
…the new body…
` + closeBody + "\n")
	return b.String()
}

func renderInput(ex Example) string {
	lines := make([]string, len(ex.Messages))
	for i, m := range ex.Messages {
		lines[i] = m.Role + ": " + m.Content
	}
	return strings.Join(lines, "\n")
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
