package formats

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/criticml/critic/domain"
)

// LangSmith imports a run export: JSONL with one run per line (a JSON array
// of runs is accepted too), grouped into traces by trace_id.
type LangSmith struct{}

func (LangSmith) Name() string { return "langsmith" }
func (LangSmith) Description() string {
	return "LangSmith run export JSONL (runs with trace_id, run_type, inputs, outputs); " +
		"built from llm runs ordered by start_time; one trace per trace_id."
}

// Detect: the first run (first line, or first element of an array) has
// run_type and trace_id, which only LangSmith runs carry together.
func (LangSmith) Detect(data []byte) bool {
	line := firstRecord(data)
	var probe struct {
		RunType json.RawMessage `json:"run_type"`
		TraceID json.RawMessage `json:"trace_id"`
	}
	if firstJSONByte(line) == '{' && json.Unmarshal(line, &probe) == nil {
		return probe.RunType != nil && probe.TraceID != nil
	}
	keys := firstObjectKeys(data)
	return keys["run_type"] && keys["trace_id"]
}

type lsRun struct {
	ID, TraceID, Parent, Type, Name string
	Start, End                      int64
	Inputs, Outputs                 any
	Extra                           map[string]any
	Line                            int
}

func (LangSmith) Parse(data []byte) ([]domain.Trace, error) {
	var runs []lsRun
	add := func(v any, line int, field string) error {
		m, ok := v.(map[string]any)
		if !ok {
			return domain.InvalidAt(line, field, "a run must be a JSON object")
		}
		r := lsRun{ID: firstString(m["id"], m["run_id"]), TraceID: anyString(m["trace_id"]),
			Parent: anyString(m["parent_run_id"]), Type: strings.ToLower(anyString(m["run_type"])), Name: anyString(m["name"]),
			Inputs: m["inputs"], Outputs: m["outputs"], Line: line}
		r.Extra, _ = m["extra"].(map[string]any)
		if r.ID == "" {
			return domain.InvalidAt(line, field+"id", "run id is missing")
		}
		var err error
		if r.Start, err = isoTimeNanos(m["start_time"], field+"start_time"); err != nil {
			return domain.AtLine(err, line)
		}
		if r.End, err = isoTimeNanos(m["end_time"], field+"end_time"); err != nil {
			return domain.AtLine(err, line)
		}
		if r.End < r.Start {
			r.End = r.Start // a run still in progress when exported
		}
		runs = append(runs, r)
		return nil
	}
	if err := eachValue(data, firstJSONByte(data) == '[', add); err != nil {
		return nil, err
	}
	if len(runs) == 0 {
		return nil, domain.Invalid("the payload holds no runs")
	}

	// Runs exported without trace_id belong to the trace of their root run.
	byID := map[string]int{}
	for i, r := range runs {
		byID[r.ID] = i
	}
	for i := range runs {
		if runs[i].TraceID != "" {
			continue
		}
		cur, seen := i, map[int]bool{}
		for runs[cur].Parent != "" && !seen[cur] {
			seen[cur] = true
			p, ok := byID[runs[cur].Parent]
			if !ok {
				break
			}
			cur = p
		}
		runs[i].TraceID = firstString(runs[cur].TraceID, runs[cur].ID)
	}

	var order []string
	groups := map[string][]lsRun{}
	for _, r := range runs {
		if _, ok := groups[r.TraceID]; !ok {
			order = append(order, r.TraceID)
		}
		groups[r.TraceID] = append(groups[r.TraceID], r)
	}
	var out []domain.Trace
	for _, tid := range order {
		t, err := langSmithTrace(tid, groups[tid])
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

func langSmithTrace(tid string, runs []lsRun) (domain.Trace, error) {
	sort.SliceStable(runs, func(i, j int) bool { return runs[i].Start < runs[j].Start })
	line := runs[0].Line
	byID := map[string]int{}
	for i, r := range runs {
		byID[r.ID] = i
	}
	// An llm run nested in another llm run (a traced client inside a chat
	// model) records the same call twice; only the outer one counts.
	insideLLM := func(i int) bool {
		seen := map[int]bool{i: true}
		for p, ok := byID[runs[i].Parent]; ok && !seen[p]; p, ok = byID[runs[p].Parent] {
			seen[p] = true
			if runs[p].Type == "llm" {
				return true
			}
		}
		return false
	}
	var calls []llmCall
	var callRuns []int
	for i, r := range runs {
		if r.Type != "llm" || insideLLM(i) {
			continue
		}
		in, out := langSmithInput(r.Inputs), outputToSteps(r.Outputs)
		if len(in)+len(out) == 0 {
			continue
		}
		calls = append(calls, llmCall{Input: in, Output: out, InputTime: rfc3339Nanos(r.Start), OutputTime: rfc3339Nanos(r.End)})
		callRuns = append(callRuns, i)
	}
	if len(calls) == 0 {
		return domain.Trace{}, domain.InvalidAt(line, "", "trace %s has no llm run with messages", tid)
	}
	steps, produced := joinCalls(calls)
	indices := make([][]int, len(runs))
	for ci, ri := range callRuns {
		indices[ri] = produced[ci]
	}
	t := domain.Trace{ExternalID: tid, Steps: steps}
	md := map[string]any{}
	for _, r := range runs {
		if r.Parent == "" || r.ID == tid {
			putString(md, "agent", r.Name)
			break
		}
	}
	for _, ri := range callRuns {
		emd, _ := runs[ri].Extra["metadata"].(map[string]any)
		inv, _ := runs[ri].Extra["invocation_params"].(map[string]any)
		if m := firstString(emd["ls_model_name"], inv["model"], inv["model_name"]); m != "" {
			md["model"] = m
			putString(md, "provider", anyString(emd["ls_provider"]))
			break
		}
	}
	if len(md) > 0 {
		t.Metadata = md
	}
	for i, r := range runs {
		t.Spans = append(t.Spans, builtSpan(domain.Span{ID: r.ID, Name: r.Name, StartNs: r.Start, EndNs: r.End,
			Input: spanJSON(r.Inputs), Output: spanJSON(r.Outputs), StepIndices: indices[i]}, r.Type, r.Parent))
	}
	if err := domain.ValidateTrace(t, line); err != nil {
		return domain.Trace{}, err
	}
	return t, nil
}

// langSmithInput reads an llm run's inputs: LangChain messages (serialized
// or dicts, batched as a list of lists), OpenAI-style {messages}, Anthropic
// style {system, messages}, or completion prompts.
func langSmithInput(v any) []domain.Step {
	m, ok := v.(map[string]any)
	if !ok {
		return langfuseInput(v)
	}
	if ps, ok := m["prompts"].([]any); ok {
		var out []domain.Step
		for _, p := range ps {
			if s := anyString(p); s != "" {
				out = append(out, domain.Step{Role: domain.RoleUser, Content: s})
			}
		}
		return out
	}
	if _, ok := pickKeyOK(m, "messages", "input", "prompt"); ok {
		return langfuseInput(m)
	}
	return messagesToSteps(m)
}
