package domain

import (
	"bytes"
	"cmp"
	"encoding/json"
	"hash/fnv"
	"slices"
	"sort"
)

// DefaultMaxPairs is the cap of spec 000 "Annotations to preference pairs"
// and the request default of `max_pairs`.
const DefaultMaxPairs = 4000

// PairTrace is a trace as pair construction needs it: ids and steps in order.
type PairTrace struct {
	ID    string
	Steps []PairStep
}

// PairStep is one step of a PairTrace. The step id ties ratings to it.
type PairStep struct {
	ID        string         `json:"id"`
	Role      Role           `json:"role"`
	Content   string         `json:"content"`
	ToolName  string         `json:"tool_name,omitempty"`
	ToolInput map[string]any `json:"tool_input,omitempty"`
	// Thinking marks the model's reasoning before a reply
	// (metadata.thinking): not an action, so not a rated target. It is
	// not part of the rendered text or of any JSON shape.
	Thinking bool `json:"-"`
}

// IsThinking reports whether a step's metadata marks it as the model's
// reasoning (metadata.thinking = true, as the importers set it): context
// for the reply it precedes, never an action a reviewer rates or a model
// scores.
func IsThinking(metadata map[string]any) bool {
	t, _ := metadata["thinking"].(bool)
	return t
}

// IsToolCall reports whether the step is an assistant action calling a tool;
// it renders with its call and counts as a "tool_call" action.
func (s PairStep) IsToolCall() bool { return s.Role == RoleAssistant && s.ToolName != "" }

// Rating is one explicit ±1 annotation. StepID "" rates the whole trace.
type Rating struct {
	AnnotationID string
	TraceID      string
	StepID       string
	Rating       int
	LabelError   bool
	// Weighted marks a criterion's value (training_config.criterion):
	// Rating is then its signed weight (criteria.Criterion.Weight), any
	// integer, summed like ratings.
	Weighted bool
	// Adjudicated marks an admin's final judgment of a disputed target
	// (annotation.adjudicated): it supersedes the members' ratings of
	// that target, which are then not summed (issue 36).
	Adjudicated bool
}

// Granularities of a Pair.
const (
	GranularityTrace = "trace"
	GranularityStep  = "step"
)

// Action types of a step Pair: what the two targets are, so training can
// report action and tool-call accuracy separately (spec 002 "Metrics").
const (
	// ActionToolCall: both targets are assistant tool calls.
	ActionToolCall = "tool_call"
	// ActionResponse: both targets are assistant text responses.
	ActionResponse = "response"
	// ActionMixed: both are assistant actions, one a call and one a response.
	ActionMixed = "mixed"
	// ActionOther: at least one target is a user or tool step — rated, but
	// not an agent action.
	ActionOther = "other"
)

// Pair is one preference: Chosen was rated better than Rejected.
type Pair struct {
	Chosen, Rejected string
	// TraceIDs are the source traces, chosen's first, without duplicates;
	// the train/eval split is by trace, so a pair spanning two traces can
	// straddle the split and be excluded.
	TraceIDs    []string
	Granularity string // GranularityTrace or GranularityStep
	// ActionType is "" for trace pairs, one of the Action* constants for step
	// pairs.
	ActionType string
	// AnnotationIDs are the annotations summed into either target, sorted:
	// the provenance `critic audit` shows for the pair.
	AnnotationIDs []string
}

// target is a rated trace or step with its summed rating.
type target struct {
	traceIdx, stepIdx int // stepIdx -1 for a trace target
	sum               int
	annotations       []string
}

// BuildPairs turns explicit ratings into preference pairs (spec 000
// "Annotations to preference pairs", spec 001 "Annotations", DESIGN §6):
//
//  1. drop label-error annotations (and, defensively, ratings other than ±1
//     — a criterion's weighted value may be any integer but 0 —, ratings on
//     unknown traces or steps, and ratings on system or thinking steps,
//     which the API refuses);
//  2. sum the ratings per trace (trace-level annotations) and per step;
//     a positive sum makes the target chosen, a negative one rejected, zero
//     neither; a target with an adjudicated rating counts that alone;
//  3. pair every chosen target with every rejected target of the same kind
//     (trace with trace, step with step), chosen targets in (trace order,
//     step index) order in the outer loop, rejected likewise inner, trace
//     pairs before step pairs;
//  4. shuffle with seed 0 (Shuffle) and keep the first maxPairs
//     (DefaultMaxPairs when maxPairs <= 0).
//
// Trace order is the order of traces. The output depends only on the
// inputs: the same input gives the same pairs in the same order, on every
// Go version.
func BuildPairs(traces []PairTrace, ratings []Rating, maxPairs int) []Pair {
	return BuildPairsRendered(traces, ratings, maxPairs, 1)
}

// BuildPairsRendered is BuildPairs with the texts rendered in an input
// version (1 or 3; see RenderVersion).
func BuildPairsRendered(traces []PairTrace, ratings []Rating, maxPairs, inputVersion int) []Pair {
	if maxPairs <= 0 {
		maxPairs = DefaultMaxPairs
	}
	type stepKey struct{ trace, step string }
	traceIdx := make(map[string]int, len(traces))
	stepIdx := map[stepKey]int{}
	for ti, tr := range traces {
		if _, dup := traceIdx[tr.ID]; dup {
			continue // the first occurrence defines the trace
		}
		traceIdx[tr.ID] = ti
		for si, st := range tr.Steps {
			if _, dup := stepIdx[stepKey{tr.ID, st.ID}]; !dup {
				stepIdx[stepKey{tr.ID, st.ID}] = si
			}
		}
	}

	type targetKey struct{ trace, step int }
	adjudicated := map[stepKey]bool{}
	for _, r := range ratings {
		if r.Adjudicated {
			adjudicated[stepKey{r.TraceID, r.StepID}] = true
		}
	}
	targets := map[targetKey]*target{}
	for _, r := range ratings {
		if r.LabelError || (!r.Weighted && r.Rating != 1 && r.Rating != -1) || r.Rating == 0 {
			continue
		}
		if !r.Adjudicated && adjudicated[stepKey{r.TraceID, r.StepID}] {
			continue
		}
		ti, ok := traceIdx[r.TraceID]
		if !ok {
			continue
		}
		si := -1
		if r.StepID != "" {
			si, ok = stepIdx[stepKey{r.TraceID, r.StepID}]
			if !ok || traces[ti].Steps[si].Role == RoleSystem || traces[ti].Steps[si].Thinking {
				continue
			}
		}
		k := targetKey{ti, si}
		t := targets[k]
		if t == nil {
			t = &target{traceIdx: ti, stepIdx: si}
			targets[k] = t
		}
		t.sum += r.Rating
		t.annotations = append(t.annotations, r.AnnotationID)
	}

	var chosenT, rejectedT, chosenS, rejectedS []*target
	for _, t := range targets {
		switch {
		case t.sum > 0 && t.stepIdx < 0:
			chosenT = append(chosenT, t)
		case t.sum < 0 && t.stepIdx < 0:
			rejectedT = append(rejectedT, t)
		case t.sum > 0:
			chosenS = append(chosenS, t)
		case t.sum < 0:
			rejectedS = append(rejectedS, t)
		}
	}
	for _, list := range [][]*target{chosenT, rejectedT, chosenS, rejectedS} {
		slices.SortFunc(list, func(a, b *target) int {
			return cmp.Or(cmp.Compare(a.traceIdx, b.traceIdx), cmp.Compare(a.stepIdx, b.stepIdx))
		})
	}

	// Render each target once; a target can be in many pairs.
	texts := map[*target]string{}
	render := func(t *target) string {
		if s, ok := texts[t]; ok {
			return s
		}
		steps := traces[t.traceIdx].Steps
		i := t.stepIdx
		if i < 0 {
			i = len(steps) - 1
		}
		s := RenderVersion(inputVersion, steps, i, t.stepIdx < 0)
		texts[t] = s
		return s
	}

	pairs := make([]Pair, 0, len(chosenT)*len(rejectedT)+len(chosenS)*len(rejectedS))
	for _, kind := range []struct {
		granularity      string
		chosen, rejected []*target
	}{{GranularityTrace, chosenT, rejectedT}, {GranularityStep, chosenS, rejectedS}} {
		for _, c := range kind.chosen {
			for _, r := range kind.rejected {
				p := Pair{
					Chosen:        render(c),
					Rejected:      render(r),
					TraceIDs:      dedup(traces[c.traceIdx].ID, traces[r.traceIdx].ID),
					Granularity:   kind.granularity,
					AnnotationIDs: mergeSorted(c.annotations, r.annotations),
				}
				if kind.granularity == GranularityStep {
					p.ActionType = actionType(traces[c.traceIdx].Steps[c.stepIdx], traces[r.traceIdx].Steps[r.stepIdx])
				}
				pairs = append(pairs, p)
			}
		}
	}
	Shuffle(len(pairs), 0, func(i, j int) { pairs[i], pairs[j] = pairs[j], pairs[i] })
	if len(pairs) > maxPairs {
		pairs = pairs[:maxPairs]
	}
	return pairs
}

func actionKind(s PairStep) string {
	switch {
	case s.IsToolCall():
		return ActionToolCall
	case s.Role == RoleAssistant:
		return ActionResponse
	}
	return ""
}

func actionType(chosen, rejected PairStep) string {
	c, r := actionKind(chosen), actionKind(rejected)
	switch {
	case c == "" || r == "":
		return ActionOther
	case c == r:
		return c
	}
	return ActionMixed
}

func dedup(a, b string) []string {
	if a == b {
		return []string{a}
	}
	return []string{a, b}
}

func mergeSorted(a, b []string) []string {
	out := make([]string, 0, len(a)+len(b))
	out = append(append(out, a...), b...)
	sort.Strings(out)
	return out
}

// Shuffle permutes n elements with Fisher–Yates driven by SplitMix64 seeded
// with seed. It is ours rather than math/rand's so pair order — and with it
// every dataset and checkpoint — never changes with the Go version: for
// i = n-1 down to 1, j = next() mod (i+1), swap(i, j). The modulo bias
// (< n/2^64) is irrelevant here and keeps the definition one line.
func Shuffle(n int, seed uint64, swap func(i, j int)) {
	rng := SplitMix64{State: seed}
	for i := n - 1; i > 0; i-- {
		j := int(rng.Next() % uint64(i+1))
		swap(i, j)
	}
}

// Seed is 64-bit FNV-1a over the parts, each followed by a 0xff byte: a
// fixed hash to seed SplitMix64 with, the same on every Go version.
func Seed(parts ...string) uint64 {
	h := fnv.New64a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0xff})
	}
	return h.Sum64()
}

// SplitMix64 is Steele, Lea & Flood's generator (the seeding generator of
// xoshiro): tiny, fully specified, and the same in any language, so a
// Python check can reproduce our shuffles.
type SplitMix64 struct{ State uint64 }

// Next returns the next 64 random bits.
func (s *SplitMix64) Next() uint64 {
	s.State += 0x9e3779b97f4a7c15
	z := s.State
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// pairJSON fixes the field order of the export shape of spec 001
// (`GET /export/pairs`): {chosen, rejected, trace_ids, granularity,
// action_type}; action_type is null for trace pairs.
type pairJSON struct {
	Chosen      string   `json:"chosen"`
	Rejected    string   `json:"rejected"`
	TraceIDs    []string `json:"trace_ids"`
	Granularity string   `json:"granularity"`
	ActionType  *string  `json:"action_type"`
}

// MarshalPairsJSONL writes pairs one JSON object per line, each line ending
// in "\n", texts verbatim (no HTML escaping). Equal pairs give equal bytes,
// which is what `critic audit` compares against a rebuild.
func MarshalPairsJSONL(pairs []Pair) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for _, p := range pairs {
		row := pairJSON{Chosen: p.Chosen, Rejected: p.Rejected, TraceIDs: p.TraceIDs, Granularity: p.Granularity}
		if row.TraceIDs == nil {
			row.TraceIDs = []string{}
		}
		if p.ActionType != "" {
			row.ActionType = new(p.ActionType)
		}
		// Strings and string slices always encode.
		_ = enc.Encode(row)
	}
	return buf.Bytes()
}
