package train

import (
	"bufio"
	"encoding/json"
	"fmt"
	"github.com/criticml/critic/domain"
	"math/rand/v2"
	"os"
	"slices"
)

// Pair is one line of pairs.jsonl (spec 001 "Job directory contract"). Evidence fields
// are ignored here.
type Pair struct {
	Chosen      string   `json:"chosen"`
	Rejected    string   `json:"rejected"`
	TraceID     string   `json:"trace_id,omitempty"`
	TraceIDs    []string `json:"trace_ids,omitempty"`
	Granularity string   `json:"granularity,omitempty"`
	ActionType  string   `json:"action_type,omitempty"`
}

// Traces is the pair's source traces (trace_ids, else trace_id).
func (p Pair) Traces() []string {
	if len(p.TraceIDs) > 0 {
		return p.TraceIDs
	}
	if p.TraceID != "" {
		return []string{p.TraceID}
	}
	return nil
}

// ActionTypes are the action_type values of step pairs that compare agent actions
// (assistant responses and tool calls) — domain.ActionResponse, ActionToolCall
// and ActionMixed as pair construction writes them. Spec 002 counts these as
// "action comparisons"; "other" (a user or tool step was rated) is not one.
var ActionTypes = map[string]bool{
	domain.ActionResponse: true, domain.ActionToolCall: true, domain.ActionMixed: true,
}

// IsAction reports whether the pair compares an agent action.
func (p Pair) IsAction() bool { return p.Granularity == "step" && ActionTypes[p.ActionType] }

// IsTool reports whether the pair compares tool calls (a subset of action pairs).
func (p Pair) IsTool() bool { return p.ActionType == "tool_call" }

// ScoreItem is one line of score_items.jsonl.
type ScoreItem struct {
	TraceID string `json:"trace_id"`
	Text    string `json:"text"`
}

// ActionScoreItem is one line of action_score_items.jsonl.
type ActionScoreItem struct {
	TraceID string `json:"trace_id"`
	StepID  string `json:"step_id"`
	Text    string `json:"text"`
}

// ReadJSONL decodes one T per non-empty line of path.
func ReadJSONL[T any](path string) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if len(b) == 0 {
			continue
		}
		var v T
		if err := json.Unmarshal(b, &v); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		out = append(out, v)
	}
	return out, sc.Err()
}

// TraceSplit is the trace-level held-out split of spec 002.
type TraceSplit struct {
	Train, Eval   []int // indices into the pairs
	ExcludedCross int   // pairs whose traces span both partitions
	Usable        bool  // false: every pair trains and eval metrics are null
}

// EvalFraction of source traces is held out (spec 002 "Training settings").
const EvalFraction = 0.1

// SplitByTrace holds out max(1, ⌊10% of distinct source traces⌋) traces, chosen by a
// shuffle seeded with seed over the sorted trace ids. A pair goes to eval when all its
// traces are held out, to train when none is, and is excluded otherwise. The split is
// usable only with ≥2 traces and at least one pair on each side; otherwise all pairs
// train and nothing is excluded. Pairs without a trace id count as one trace "".
func SplitByTrace(pairs []Pair, seed uint64) TraceSplit {
	set := map[string]bool{}
	for _, p := range pairs {
		ts := p.Traces()
		if len(ts) == 0 {
			ts = []string{""}
		}
		for _, t := range ts {
			set[t] = true
		}
	}
	traces := make([]string, 0, len(set))
	for t := range set {
		traces = append(traces, t)
	}
	slices.Sort(traces)
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
	for i, p := range pairs {
		ts := p.Traces()
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
