package worker

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/platform/llm"
)

var (
	sectionSchema = llm.Object(map[string]*llm.Schema{
		"title":     {Type: "string", Description: "at most 8 words: what the section does", MaxLength: 200},
		"summary":   {Type: "string", Description: "one or two sentences", MaxLength: 2000},
		"objective": {Type: "string", Description: "the section's own local objective", MaxLength: 1000},
		"score":     {Type: "number", Nullable: true, Description: "0-1 estimate of success at the local objective, or null"},
		"reason":    {Type: "string", Description: "why that score, or why it is null", MaxLength: 2000},
	})
	completionSchema = llm.Object(map[string]*llm.Schema{
		"tasks": {Type: "array", Items: llm.Object(map[string]*llm.Schema{
			"objective": {Type: "string", Description: "the request as the user stated it", MaxLength: 1000},
			"checkpoints": {Type: "array", Items: llm.Object(map[string]*llm.Schema{
				"step_id":    {Type: "string", Description: "a step id of the task, from the events"},
				"completion": {Type: "number", Nullable: true, Description: "0-1 progress shown by the evidence at this step, or null"},
				"reason":     {Type: "string", MaxLength: 1000},
			})},
		})},
	})
)

// assessments runs one critic.jobs.assess job with the fast model: the
// claim answers the prompts of the items still current (a stale or
// duplicate job calls no model); it makes one schema-bound call per item
// and reports each answer or failure; the API validates answers against
// the trace (exact ranges, references, 0–1 bounds) before caching them.
var assessments = register(Kind[jobs.AssessJob, jobs.AssessSource, struct{}]{
	Consume: short,
	Kind:    jobs.KindAssess, What: "assessment job", IDKey: "trace_id", NoFinish: true,
	Ready: func(w *Worker) error {
		if w.cfg.Fast == nil {
			return errors.New("no fast model on this worker: assessments stay pending until a worker with one takes them (" + w.cfg.FastUnavailable + ")")
		}
		return nil
	},
	Claimed: func(a jobs.AssessSource) []any { return []any{"items", len(a.Inputs)} },
	Work: func(ctx context.Context, j *Job[jobs.AssessSource]) (struct{}, error) {
		fast := j.w.cfg.Fast
		model := fast.Model().String()
		for _, in := range j.Args.Inputs {
			rep := assess(ctx, fast, j.Args.Kind, in)
			if ctx.Err() != nil {
				return struct{}{}, RetryLater(ctx.Err())
			}
			rep.Model, rep.Usage.Model = model, model
			if err := j.Report(ctx, rep, nil); ctx.Err() != nil {
				return struct{}{}, RetryLater(ctx.Err())
			} else if err != nil {
				j.Log.Warn("could not record the assessment", "error", err)
			}
		}
		return struct{}{}, nil
	},
})

// assess asks the fast model about one item: a section summary or a
// completion estimate, or the error that says why not.
func assess(ctx context.Context, fast *llm.Client, kind string, in jobs.AssessInput) jobs.AssessReport {
	model := fast.Model().String()
	schema := sectionSchema
	if kind == events.AssessmentCompletion {
		schema = completionSchema
	}
	res, err := fast.Call(ctx, llm.Request{Name: "assessment", Instructions: in.Instructions, Input: in.Input, Schema: schema, MaxTokens: 2000})
	rep := jobs.AssessReport{Item: in.Item, Usage: usageOf("", res.Usage)}
	switch {
	case err != nil:
		rep.Error = err.Error()
	case kind == events.AssessmentCompletion:
		var out struct {
			Tasks []struct {
				Objective   string              `json:"objective"`
				Checkpoints []events.Checkpoint `json:"checkpoints"`
			} `json:"tasks"`
		}
		if err := json.Unmarshal(res.JSON, &out); err != nil {
			rep.Error = model + ": malformed answer: " + err.Error()
		}
		for k, t := range out.Tasks {
			if k >= len(in.Item.Tasks) {
				break // the API refuses a count mismatch by the lengths below
			}
			obj := t.Objective
			rep.Tasks = append(rep.Tasks, events.CompletionTask{FirstStepID: in.Item.Tasks[k].FirstStepID, LastStepID: in.Item.Tasks[k].LastStepID,
				Objective: &obj, Checkpoints: t.Checkpoints})
		}
		if len(out.Tasks) != len(in.Item.Tasks) && rep.Error == "" {
			rep.Error = model + ": the answer has " + strconv.Itoa(len(out.Tasks)) + " tasks for " + strconv.Itoa(len(in.Item.Tasks)) + " requested"
		}
	default:
		var s jobs.SectionAnswer
		if err := json.Unmarshal(res.JSON, &s); err != nil {
			rep.Error = model + ": malformed answer: " + err.Error()
		} else {
			rep.Section = &s
		}
	}
	return rep
}

// usageOf is the usage of model's calls as an event records it.
func usageOf(model string, u llm.Usage) events.LLMUsage {
	return events.LLMUsage{Model: model, Calls: u.Calls, InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CachedTokens: u.CachedTokens}
}
