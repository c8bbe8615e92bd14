package rewardmodels

import (
	"cmp"
	"slices"
	"strings"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/assessment"
	"github.com/criticml/critic/domain/feedback"
	"github.com/criticml/critic/domain/traces"
)

// SourceVerifiedOutcome marks a comparison decided by verified outcomes
// instead of a reviewer (spec 002: "human-reviewed or verified-outcome
// comparisons"): two traces of one owner share the same prior context up to
// an action, one verifiably succeeded and the other failed, so the
// succeeded trace's action there is preferred to the failed one's. This is
// the pairing of rollouts from one prompt that verifiers grade.
const SourceVerifiedOutcome = "verified_outcome"

// Verified outcomes and where they come from.
const (
	OutcomeSuccess = "success"
	OutcomeFailure = "failure"
	// OutcomeMetadataKey is the explicit outcome an importer sets on a
	// trace (`metadata.outcome`: "success" or "failure"), e.g. from a test
	// suite or a task checker. It wins over the step labels.
	OutcomeMetadataKey = "outcome"
	// OutcomeFromImport: metadata.outcome; OutcomeFromStepLabels: the step
	// scores' outcome from the step labels (the user accepted or rejected
	// the final answers); OutcomeFromRubric: an imported
	// metadata.rubric_summary's outcome.
	OutcomeFromImport     = "metadata.outcome"
	OutcomeFromStepLabels = "step_labels"
	OutcomeFromRubric     = "rubric_summary"
)

// VerifiedOutcome is a trace's verified outcome ("success" or "failure")
// and where it came from; ok is false when the trace has none (no explicit
// outcome, and labels that leave it partial, open or unlabeled).
func VerifiedOutcome(s traces.State) (outcome, from string, ok bool) {
	if v, isStr := s.Metadata[OutcomeMetadataKey].(string); isStr {
		switch strings.ToLower(strings.TrimSpace(v)) {
		case OutcomeSuccess:
			return OutcomeSuccess, OutcomeFromImport, true
		case OutcomeFailure:
			return OutcomeFailure, OutcomeFromImport, true
		}
	}
	a := assessment.Of(s.StepList(), s.StepIDs(), s.Metadata, s.StepLabels, s.QualityChecks)
	if a.StepScores == nil {
		return "", "", false
	}
	from = OutcomeFromStepLabels
	if a.StepScores.Source == assessment.SourceImported {
		from = OutcomeFromRubric
	}
	switch a.StepScores.Outcome {
	case OutcomeSuccess, OutcomeFailure:
		return a.StepScores.Outcome, from, true
	}
	return "", "", false
}

// VerifiedComparison is one verified-outcome comparison: the succeeded
// trace's action against the failed trace's action after the same prior
// context, with both outcomes' provenance.
type VerifiedComparison struct {
	// ID is stable for the same traces and steps, so a benchmark and an
	// audit can name it.
	ID                 string
	Context            string
	Chosen, Rejected   feedback.Target // the succeeded and the failed trace's action
	ChosenTrace        traces.State
	RejectedTrace      traces.State
	ChosenFrom         string // where the success came from (OutcomeFrom…)
	RejectedFrom       string // where the failure came from
	ChosenText         string // context + action, rendered as a step target
	RejectedText       string
	ChosenActionIsTool bool
}

// VerifiedComparisons pairs the traces' verified outcomes: for every
// succeeded and failed trace of the same owner, the first action where they
// differ after an identical, nonempty prior context (system steps excluded,
// as step targets render). Traces that never share a context make none;
// after the actions differ the contexts do too, so a pair of traces gives
// at most one comparison. Ordered by succeeded trace, failed trace.
func VerifiedComparisons(states []traces.State) []VerifiedComparison {
	type side struct {
		s    traces.State
		from string
	}
	var wins, losses []side
	for _, s := range states {
		if !s.Exists {
			continue
		}
		if o, from, ok := VerifiedOutcome(s); ok {
			if o == OutcomeSuccess {
				wins = append(wins, side{s, from})
			} else {
				losses = append(losses, side{s, from})
			}
		}
	}
	if len(wins) == 0 || len(losses) == 0 {
		return nil
	}
	type at struct {
		side
		t feedback.Target
	}
	byContext := map[string][]at{} // owner + context → failed traces' actions there
	for _, l := range losses {
		for _, t := range feedback.Targets(FeedbackTrace(l.s)) {
			if t.Context != "" {
				byContext[l.s.OwnerID+"\x00"+t.Context] = append(byContext[l.s.OwnerID+"\x00"+t.Context], at{l, t})
			}
		}
	}
	var out []VerifiedComparison
	for _, w := range wins {
		for _, t := range feedback.Targets(FeedbackTrace(w.s)) {
			if t.Context == "" {
				continue
			}
			for _, l := range byContext[w.s.OwnerID+"\x00"+t.Context] {
				if l.t.Action == t.Action {
					continue
				}
				with := func(a string) string { return t.Context + "\n" + a }
				out = append(out, VerifiedComparison{
					ID:      "verified:" + w.s.ID + "/" + t.StepID + ":" + l.s.ID + "/" + l.t.StepID,
					Context: t.Context, Chosen: t, Rejected: l.t, ChosenTrace: w.s, RejectedTrace: l.s,
					ChosenFrom: w.from, RejectedFrom: l.from, ChosenText: with(t.Action), RejectedText: with(l.t.Action),
					ChosenActionIsTool: t.ToolName != ""})
			}
		}
	}
	slices.SortStableFunc(out, func(a, b VerifiedComparison) int {
		return cmp.Or(strings.Compare(a.ChosenTrace.ID, b.ChosenTrace.ID), strings.Compare(a.RejectedTrace.ID, b.RejectedTrace.ID))
	})
	return out
}

// VerifiedPairs are the verified-outcome comparisons among the selected
// traces as personal-model pairs: source verified_outcome, both traces and
// revisions, and where each outcome came from.
func VerifiedPairs(selected []traces.State, version int) []DatasetPair {
	var out []DatasetPair
	for _, vc := range VerifiedComparisons(selected) {
		chosen, rejected := vc.ChosenText, vc.RejectedText
		if version == 3 {
			chosen, rejected = domain.V3Sections(vc.Context, vc.Chosen.Action), domain.V3Sections(vc.Context, vc.Rejected.Action)
		}
		at := domain.ActionResponse
		if vc.ChosenActionIsTool {
			at = domain.ActionToolCall
		}
		out = append(out, DatasetPair{Chosen: chosen, Rejected: rejected, TraceIDs: []string{vc.ChosenTrace.ID, vc.RejectedTrace.ID},
			Granularity: domain.GranularityStep, ActionType: &at, AnnotationIDs: []string{},
			TraceRevisions: map[string]int{vc.ChosenTrace.ID: vc.ChosenTrace.Revision, vc.RejectedTrace.ID: vc.RejectedTrace.Revision},
			Source:         SourceVerifiedOutcome,
			Verified:       &VerifiedProvenance{Comparison: vc.ID, ChosenOutcomeFrom: vc.ChosenFrom, RejectedOutcomeFrom: vc.RejectedFrom}})
	}
	return out
}

// VerifiedProvenance is a verified-outcome pair's provenance: which
// comparison, and where the chosen trace's success and the rejected
// trace's failure were read from.
type VerifiedProvenance struct {
	Comparison          string `json:"comparison"`
	ChosenOutcomeFrom   string `json:"chosen_outcome_from"`
	RejectedOutcomeFrom string `json:"rejected_outcome_from"`
}
