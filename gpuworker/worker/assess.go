package worker

import (
	"context"
	"encoding/json"
	"net/url"
	"strconv"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/platform/llm"
)

// TopicAssess carries section-summary and completion jobs (domain/jobs).
const TopicAssess = jobs.TopicAssess

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

// HandleAssess runs one critic.jobs.assess message with the fast model: it
// fetches the prompts of the items still current (a stale or duplicate job
// calls no model), makes one schema-bound call per item, and reports each
// answer or failure; the API validates answers against the trace (exact
// ranges, references, 0–1 bounds) before caching them.
func (w *Worker) HandleAssess(ctx context.Context, payload []byte) bool {
	var m jobs.AssessJob
	if err := json.Unmarshal(payload, &m); err != nil || !safeID(m.TraceID) {
		w.log.Error("dropping malformed assessment message", "payload", truncate(string(payload), 300), "error", err)
		return true
	}
	log := w.log.With(withRequestID(ctx, "job", "assess", "trace_id", m.TraceID, "kind", m.Kind)...)
	if w.cfg.Fast == nil {
		log.Warn("no fast model on this worker: assessments stay pending until a worker with one takes them", "reason", w.cfg.FastUnavailable)
		return true
	}
	esc := url.PathEscape(m.TraceID)
	src, err := retry(ctx, w.cfg.ReportRetryFor, log, "fetching the assessment source", func(ctx context.Context) (jobs.AssessSource, error) {
		var s jobs.AssessSource
		err := w.client.post(ctx, jobs.AssessSourcePath(esc), jobs.AssessSourceRequest{WorkerID: w.client.WorkerID, Kind: m.Kind, Items: m.Items}, &s)
		return s, err
	})
	if ctx.Err() != nil {
		return false
	}
	if err != nil {
		log.Warn("assessment source unavailable; skipping", "error", err)
		return true
	}
	model := w.cfg.Fast.Model().String()
	for _, in := range src.Inputs {
		schema := sectionSchema
		if m.Kind == events.AssessmentCompletion {
			schema = completionSchema
		}
		res, err := w.cfg.Fast.Call(ctx, llm.Request{Name: "assessment", Instructions: in.Instructions, Input: in.Input, Schema: schema, MaxTokens: 2000})
		if ctx.Err() != nil {
			return false
		}
		u := res.Usage
		rep := jobs.AssessReport{WorkerID: w.client.WorkerID, Kind: m.Kind, Item: in.Item, Model: model,
			Usage: events.LLMUsage{Model: model, Calls: u.Calls, InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CachedTokens: u.CachedTokens}}
		if err != nil {
			rep.Error = err.Error()
		} else if m.Kind == events.AssessmentCompletion {
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
		} else {
			var s jobs.SectionAnswer
			if err := json.Unmarshal(res.JSON, &s); err != nil {
				rep.Error = model + ": malformed answer: " + err.Error()
			} else {
				rep.Section = &s
			}
		}
		_, err = retry(ctx, w.cfg.ReportRetryFor, log, "recording an assessment", func(ctx context.Context) (struct{}, error) {
			return struct{}{}, w.client.post(ctx, jobs.AssessRecordPath(esc), rep, nil)
		})
		if ctx.Err() != nil {
			return false
		}
		if err != nil {
			log.Warn("could not record the assessment", "error", err)
		}
	}
	return true
}
