package comparisons

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"
	"strings"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/feedback"
)

// A second comparison source (spec 002: "or two models' preferred
// actions"): where an account's traces hold several different actions for
// the same prior context (rollouts of one prompt, retries) and two of its
// personal reward models scored them, each model prefers the action it
// scores highest. When the two prefer different actions, a person decides
// between them: the disagreements of two models are the comparisons most
// worth a reviewer's time.

// ModelScore is one model's raw reward for one action of a trace's current
// revision (scores of one model are comparable with each other, never
// across models).
type ModelScore struct {
	ModelID, TraceID, StepID string
	Score                    float64
}

// ModelPair is one comparison of two models' preferred actions: A is
// model A's preferred action, B model B's, for the same prior context.
type ModelPair struct {
	// Key identifies the comparison for POST /comparisons (its finding_id):
	// models:<model B>:<context id>, with model A as its model_id.
	Key              string
	ModelA, ModelB   string
	ContextID        string
	Context          string
	A, B             feedback.Target
	ScoreA, ScoreB   float64 // each model's score of its own preferred action
	CandidateActions int     // distinct actions both models scored here
}

// ModelsKeyPrefix starts the key of a models comparison.
const ModelsKeyPrefix = events.ComparisonFromModels + ":"

// ContextID is a short, stable hash of a rendered prior context.
func ContextID(context string) string {
	sum := sha256.Sum256([]byte(context))
	return hex.EncodeToString(sum[:8])
}

// ModelsKey is a models comparison's key.
func ModelsKey(modelB, contextID string) string { return ModelsKeyPrefix + modelB + ":" + contextID }

// ParseModelsKey splits a models comparison's key; ok is false for any
// other string (a finding id).
func ParseModelsKey(key string) (modelB, contextID string, ok bool) {
	rest, found := strings.CutPrefix(key, ModelsKeyPrefix)
	if !found {
		return "", "", false
	}
	modelB, contextID, found = strings.Cut(rest, ":")
	if !found || modelB == "" || contextID == "" {
		return "", "", false
	}
	return modelB, contextID, true
}

// ModelPairs finds, among the action targets of an account's traces (their
// current revisions) and its models' scores of them, every context where
// two models prefer different actions. A context needs a nonempty prior
// context and at least two distinct actions both models scored; a model
// whose top score is shared by two actions prefers neither, so it makes no
// comparison there. An action taken in several traces is represented by the
// first in (trace id, step id) order and scored by its mean. Ordered by
// context id, then model A, then model B (A < B by id).
func ModelPairs(targets []feedback.Target, scores []ModelScore) []ModelPair {
	type action struct {
		t      feedback.Target
		scores map[string][]float64 // by model
	}
	models := map[string]bool{}
	byModelStep := map[string]map[string]float64{}
	for _, s := range scores {
		if byModelStep[s.ModelID] == nil {
			byModelStep[s.ModelID] = map[string]float64{}
		}
		byModelStep[s.ModelID][s.TraceID+"/"+s.StepID] = s.Score
		models[s.ModelID] = true
	}
	sorted := append([]feedback.Target(nil), targets...)
	slices.SortStableFunc(sorted, func(a, b feedback.Target) int {
		return cmp.Or(cmp.Compare(a.TraceID, b.TraceID), cmp.Compare(a.StepID, b.StepID))
	})
	contexts := map[string][]*action{} // context → its distinct actions
	index := map[string]*action{}      // context + action → the action
	for _, t := range sorted {
		if t.Context == "" {
			continue
		}
		k := t.Context + "\x00" + t.Action
		a := index[k]
		if a == nil {
			a = &action{t: t, scores: map[string][]float64{}}
			index[k] = a
			contexts[t.Context] = append(contexts[t.Context], a)
		}
		for m := range models {
			if v, ok := byModelStep[m][t.TraceID+"/"+t.StepID]; ok {
				a.scores[m] = append(a.scores[m], v)
			}
		}
	}
	ids := slices.Sorted(maps.Keys(models))
	mean := func(xs []float64) float64 {
		var s float64
		for _, x := range xs {
			s += x
		}
		return s / float64(len(xs))
	}
	// best is a model's preferred action among the candidates, or -1 when
	// its top score is tied.
	best := func(cands []*action, m string) (int, float64) {
		bi, bv, tied := -1, 0.0, false
		for i, a := range cands {
			v := mean(a.scores[m])
			switch {
			case bi < 0 || v > bv:
				bi, bv, tied = i, v, false
			case v == bv:
				tied = true
			}
		}
		if tied {
			return -1, 0
		}
		return bi, bv
	}
	var out []ModelPair
	for ctx, acts := range contexts {
		if len(acts) < 2 {
			continue
		}
		for i, ma := range ids {
			for _, mb := range ids[i+1:] {
				var cands []*action
				for _, a := range acts {
					if len(a.scores[ma]) > 0 && len(a.scores[mb]) > 0 {
						cands = append(cands, a)
					}
				}
				if len(cands) < 2 {
					continue
				}
				ia, va := best(cands, ma)
				ib, vb := best(cands, mb)
				if ia < 0 || ib < 0 || ia == ib {
					continue
				}
				cid := ContextID(ctx)
				out = append(out, ModelPair{Key: ModelsKey(mb, cid), ModelA: ma, ModelB: mb, ContextID: cid, Context: ctx,
					A: cands[ia].t, B: cands[ib].t, ScoreA: va, ScoreB: vb, CandidateActions: len(cands)})
			}
		}
	}
	slices.SortFunc(out, func(a, b ModelPair) int {
		return cmp.Or(cmp.Compare(a.ContextID, b.ContextID), cmp.Compare(a.ModelA, b.ModelA), cmp.Compare(a.ModelB, b.ModelB))
	})
	return out
}

// ModelSides returns left and right of a models comparison for a reviewer:
// the order is seeded by reviewer and key (like OriginalLeft), the same
// every time, and recorded with the verdict.
func ModelSides(reviewerID string, p ModelPair) (left, right events.ComparisonSide) {
	a := events.ComparisonSide{Kind: events.SideModelA, Action: p.A.Action, ModelID: p.ModelA, TraceID: p.A.TraceID, StepID: p.A.StepID}
	b := events.ComparisonSide{Kind: events.SideModelB, Action: p.B.Action, ModelID: p.ModelB, TraceID: p.B.TraceID, StepID: p.B.StepID}
	if OriginalLeft(reviewerID, p.ModelA+"/"+p.Key) {
		return a, b
	}
	return b, a
}
