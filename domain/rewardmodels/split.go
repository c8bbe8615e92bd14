package rewardmodels

import (
	"maps"
	"math/rand/v2"
	"slices"
)

// EvalFraction of source traces is held out (spec 002 "Training settings").
const EvalFraction = 0.1

// TraceSplit is the trace-level held-out split of spec 002.
type TraceSplit struct {
	Train, Eval   []int // indices into the pairs
	ExcludedCross int   // pairs whose traces span both partitions
	Usable        bool  // false: every pair trains and eval metrics are null
}

// SplitByTrace holds out max(1, ⌊10% of distinct source traces⌋) traces,
// chosen by a shuffle seeded with seed over the sorted trace ids; pairs[i]
// is pair i's source traces. A pair goes to eval when all its traces are
// held out, to train when none is, and is excluded otherwise. The split is
// usable only with ≥2 traces and at least one pair on each side; otherwise
// all pairs train and nothing is excluded. Pairs without a trace id count
// as one trace "". It lives here, pure, because the trainer splits with it
// and the learning report says which findings landed on the held-out side
// (included_in_evaluation): one split, so the two cannot disagree.
func SplitByTrace(pairs [][]string, seed uint64) TraceSplit {
	set := map[string]bool{}
	for _, ts := range pairs {
		if len(ts) == 0 {
			ts = []string{""}
		}
		for _, t := range ts {
			set[t] = true
		}
	}
	traces := slices.Sorted(maps.Keys(set))
	all := TraceSplit{}
	for i := range pairs {
		all.Train = append(all.Train, i)
	}
	if len(traces) < 2 {
		return all
	}
	rng := rand.New(rand.NewPCG(seed, 0xc417))
	rng.Shuffle(len(traces), func(i, j int) { traces[i], traces[j] = traces[j], traces[i] })
	nEval := max(1, int(float64(len(traces))*EvalFraction))
	held := map[string]bool{}
	for _, t := range traces[:nEval] {
		held[t] = true
	}
	var s TraceSplit
	for i, ts := range pairs {
		if len(ts) == 0 {
			ts = []string{""}
		}
		nh := 0
		for _, t := range ts {
			if held[t] {
				nh++
			}
		}
		switch nh {
		case 0:
			s.Train = append(s.Train, i)
		case len(ts):
			s.Eval = append(s.Eval, i)
		default:
			s.ExcludedCross++
		}
	}
	if len(s.Eval) == 0 || len(s.Train) == 0 {
		return all
	}
	s.Usable = true
	return s
}

// EvaluationFindings lists the findings whose pairs the trainer holds out
// for evaluation (seed 0, as training uses): the learning report's
// included_in_evaluation. Empty when the split is not usable (every pair
// trains).
func EvaluationFindings(ds Dataset) []string {
	traces := make([][]string, len(ds.Pairs))
	for i, p := range ds.Pairs {
		traces[i] = p.TraceIDs
	}
	split := SplitByTrace(traces, 0)
	if !split.Usable {
		return nil
	}
	var ids []string
	for _, i := range split.Eval {
		ids = append(ids, ds.Pairs[i].FindingIDs...)
	}
	return ids
}
