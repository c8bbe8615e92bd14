package train

import (
	"bufio"
	"encoding/json"
	"fmt"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/rewardmodels"
	"os"
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
	for line := 1; sc.Scan(); line++ {
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

// SplitByTrace is rewardmodels.SplitByTrace over the pairs' source traces:
// the learning report computes the same split from the dataset.
func SplitByTrace(pairs []Pair, seed uint64) rewardmodels.TraceSplit {
	traces := make([][]string, len(pairs))
	for i, p := range pairs {
		traces[i] = p.Traces()
	}
	return rewardmodels.SplitByTrace(traces, seed)
}
