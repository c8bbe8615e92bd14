package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/criticml/critic/commands"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/domain/traces"
)

// findingIndex finds the current attempt's findings and the text of every
// step of the selected traces, for the audit of feedback pairs.
type findingIndex struct {
	findings map[string]events.Finding
	record   map[string]events.RewardModelFeedbackExtractedV1
	steps    map[string]string // step id → content (tool calls: name and input)
}

func newFindingIndex(st rewardmodels.State, selected []traces.State) findingIndex {
	ix := findingIndex{findings: map[string]events.Finding{}, record: map[string]events.RewardModelFeedbackExtractedV1{}, steps: map[string]string{}}
	for _, r := range st.Extracted {
		for _, f := range r.Findings {
			ix.findings[f.ID], ix.record[f.ID] = f, r
		}
	}
	for _, s := range selected {
		for _, step := range s.Steps {
			ix.steps[step.ID] = step.Content
		}
	}
	return ix
}

// auditFindings prints a feedback pair's findings: label, source, evidence
// and the message or annotation it quotes, the classifier model, prompt
// version and review. It returns problems (a finding the log lacks, a quote
// its source does not contain).
func auditFindings(out io.Writer, ix findingIndex, facts map[string]*annotationFact, pairNo int, p rewardmodels.DatasetPair) []string {
	var problems []string
	for _, id := range p.FindingIDs {
		f, ok := ix.findings[id]
		if !ok {
			problems = append(problems, fmt.Sprintf("pair %d: finding %s is not in the log", pairNo, id))
			continue
		}
		rec := ix.record[id]
		fmt.Fprintf(out, "  finding %s: %s %s (%s confidence) on step %d of trace %s revision %d\n", f.ID, f.Source, f.Label, f.Confidence,
			f.StepIndex, f.TraceID, rec.TraceRevision)
		fmt.Fprintf(out, "    classifier %s, prompt %s", f.ClassifierModel, f.PromptVersion)
		if rec.ReusedFrom != "" {
			fmt.Fprintf(out, ", reused from event %s", rec.ReusedFrom)
		}
		fmt.Fprintln(out)
		fmt.Fprintf(out, "    reason: %s\n", f.Reason)
		if f.EvidenceID != nil && f.EvidenceQuote != nil {
			fmt.Fprintf(out, "    evidence %s: %q\n", *f.EvidenceID, *f.EvidenceQuote)
			source, what := "", ""
			if stepID, ok := strings.CutPrefix(*f.EvidenceID, "step:"); ok {
				source, what = ix.steps[stepID], "source message"
			} else if annID, ok := strings.CutPrefix(*f.EvidenceID, "annotation:"); ok {
				if a := facts[annID]; a != nil && a.comment != nil {
					source, what = *a.comment, fmt.Sprintf("source annotation by %s at %s", a.author, a.at)
				}
			}
			if what != "" {
				fmt.Fprintf(out, "    %s: %q\n", what, source)
			}
			if f.Source == events.FindingUserFeedback && f.Outcome == events.OutcomePair && !strings.Contains(source, *f.EvidenceQuote) {
				problems = append(problems, fmt.Sprintf("pair %d: finding %s quotes text its source does not contain", pairNo, id))
			}
		}
		if f.AlternativeAction != nil {
			fmt.Fprintf(out, "    original:    %s\n    alternative: %s\n", oneLine(f.OriginalAction), oneLine(*f.AlternativeAction))
		}
		if r := f.Review; r != nil {
			fmt.Fprintf(out, "    review: preferred %s, grounded %v, passed %v: %s\n", r.Preferred, r.Grounded, r.Passed, r.Reason)
		}
	}
	return problems
}

// auditReport summarizes the learning report: findings by outcome and the
// LLM usage recorded.
func auditReport(out io.Writer, st rewardmodels.State) {
	if len(st.Extracted) == 0 {
		return
	}
	outcomes := map[string]int{}
	usage := map[string]*events.LLMUsage{}
	n := 0
	for _, r := range st.Extracted {
		for _, f := range r.Findings {
			outcomes[f.Outcome]++
			n++
		}
		for _, u := range r.Usage {
			if usage[u.Model] == nil {
				usage[u.Model] = &events.LLMUsage{Model: u.Model}
			}
			usage[u.Model].Calls += u.Calls
			usage[u.Model].InputTokens += u.InputTokens
			usage[u.Model].OutputTokens += u.OutputTokens
		}
	}
	fmt.Fprintf(out, "learning report: %d finding(s) on %d trace(s):", n, len(st.Extracted))
	for _, o := range []string{events.OutcomePair, events.OutcomeAbstained, events.OutcomeLowConfidence, events.OutcomeNotAboutAgent,
		events.OutcomeInvalidEvidence, events.OutcomeNoAlternative, events.OutcomeInvalidAlternative, events.OutcomeReviewRejected, events.OutcomeReviewFailed} {
		if outcomes[o] > 0 {
			fmt.Fprintf(out, " %s %d", o, outcomes[o])
		}
	}
	fmt.Fprintln(out)
	for _, model := range slices.Sorted(maps.Keys(usage)) { // the same report twice reads the same
		u := usage[model]
		fmt.Fprintf(out, "llm usage: %s %d call(s), %d input and %d output tokens\n", u.Model, u.Calls, u.InputTokens, u.OutputTokens)
	}
	fmt.Fprintln(out)
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", `\n`)
	if r := []rune(s); len(r) > 160 {
		s = string(r[:160]) + "…"
	}
	return s
}

// auditFindingsOnly is the audit of a model whose attempt has findings but
// no dataset (it failed, or is still being extracted): every finding with its
// evidence, so a failed model's report can be checked too.
func auditFindingsOnly(ctx context.Context, in *infra, cmds *commands.Commands, st rewardmodels.State, out io.Writer) error {
	asOf, err := cmds.Streams.QueuedAt(ctx, st)
	if err != nil {
		return err
	}
	selected, err := cmds.Streams.Selection(ctx, st, asOf)
	if err != nil {
		return err
	}
	facts, _, err := traceFacts(ctx, in, st.OwnerID, asOf)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "model %s %q — attempt %d, status %s, no dataset", st.ID, st.Requested.Name, st.Attempt, st.Status)
	if st.Error != "" {
		fmt.Fprintf(out, ": %s", st.Error)
	}
	fmt.Fprint(out, "\n\n")
	auditReport(out, st)
	ix := newFindingIndex(st, selected)
	var problems []string
	for _, r := range st.Extracted {
		for _, f := range r.Findings {
			fmt.Fprintf(out, "outcome %s:\n", f.Outcome)
			problems = append(problems, auditFindings(out, ix, facts, 0, rewardmodels.DatasetPair{FindingIDs: []string{f.ID}})...)
		}
	}
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(out, "MISMATCH:", p)
		}
		return fmt.Errorf("audit failed: %d problem(s)", len(problems))
	}
	return nil
}
