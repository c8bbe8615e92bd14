package rewardmodels

import (
	"encoding/json"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/assessment"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/stepscores"
	"github.com/criticml/critic/domain/traces"
)

// SourceAutomatic marks a pair built from the automatic annotation
// (training_config.annotation_source "automatic").
const SourceAutomatic = "automatic"

// CreditMethodStepScore is the credit method of comparisons between steps
// scored by the deterministic step-score rules (labels, no classifier
// distribution): the step's score, −1..1.
const CreditMethodStepScore = stepscores.Policy

// autoTarget is one automatically credited action or trace.
type autoTarget struct {
	credit float64
	method string
}

// automaticPairs builds comparisons from the automatic annotation of the
// selected traces, with no manual annotation: every scorable action's
// credit is its expected credit (probability_weighted_v1) where a
// classifier distribution gives one, else its step score from the labels
// (step_scores_v1); a trace's credit is its trace score (step_scores_v1).
// Positive credit is chosen, negative rejected, zero neither; pairs are
// made exactly as from ratings (every chosen with every rejected of the
// same kind, rendered the same way, seed-0 order, capped at maxPairs),
// separately per credit method so a pair never compares two kinds of
// number, and every pair records chosen_credit, rejected_credit and
// credit_method.
func automaticPairs(selected []traces.State, maxPairs int, cfg events.TrainingConfig) []DatasetPair {
	inputVersion := cfg.InputVersion
	var pts []domain.PairTrace
	revision := map[string]int{}
	byMethod := map[string][]domain.Rating{}
	targets := map[string]autoTarget{}
	add := func(id, traceID, stepID string, t autoTarget) {
		if t.credit == 0 {
			return
		}
		r := 1
		if t.credit < 0 {
			r = -1
		}
		targets[id] = t
		byMethod[t.method] = append(byMethod[t.method], domain.Rating{AnnotationID: id, TraceID: traceID, StepID: stepID, Rating: r})
	}
	for _, s := range selected {
		pt := PairTraceFor(s, cfg)
		pts = append(pts, pt)
		revision[s.ID] = s.Revision
		a := assessment.Of(s.StepList(), s.StepIDs(), s.Metadata, s.StepLabels, s.QualityChecks)
		for i, st := range pt.Steps {
			r := a.Rewards[i]
			if r == nil || !IsScorableAction(st) {
				continue
			}
			if ec, ok := number(r["expected_credit"]); ok {
				add(s.ID+"/"+st.ID, s.ID, st.ID, autoTarget{ec, stepscores.CreditMethod})
			} else if sc, ok := number(r["score"]); ok {
				add(s.ID+"/"+st.ID, s.ID, st.ID, autoTarget{sc, CreditMethodStepScore})
			}
		}
		if a.StepScores != nil && a.StepScores.TraceScore != nil {
			add(s.ID, s.ID, "", autoTarget{*a.StepScores.TraceScore, CreditMethodStepScore})
		}
	}
	var out []DatasetPair
	for _, method := range []string{stepscores.CreditMethod, CreditMethodStepScore} {
		for _, p := range domain.BuildPairsRendered(pts, byMethod[method], maxPairs, inputVersion) {
			if len(out) >= maxPairs {
				return out
			}
			dp := DatasetPair{Chosen: p.Chosen, Rejected: p.Rejected, TraceIDs: p.TraceIDs, Granularity: p.Granularity,
				AnnotationIDs: []string{}, TraceRevisions: map[string]int{}, Source: SourceAutomatic, CreditMethod: method}
			if p.ActionType != "" {
				dp.ActionType = new(p.ActionType)
			}
			for _, id := range p.AnnotationIDs {
				t := targets[id]
				c := t.credit
				if c > 0 {
					dp.ChosenCredit = &c
				} else {
					dp.RejectedCredit = &c
				}
			}
			for _, id := range p.TraceIDs {
				dp.TraceRevisions[id] = revision[id]
			}
			out = append(out, dp)
		}
	}
	return out
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}
