package worker

import (
	"context"
	"encoding/json"
	"net/url"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/platform/llm"
)

// TopicTitle carries title jobs (domain/jobs).
const TopicTitle = jobs.TopicTitle

// TitleMessage is a critic.jobs.title value (domain/jobs).
type TitleMessage = jobs.TitleJob

var titleSchema = llm.Object(map[string]*llm.Schema{"title": llm.String("the title, at most 8 words")})

// HandleTitle titles one trace revision with the fast model. A failure is
// logged and dropped: the derived title stays, and imports never depend on
// a model.
func (w *Worker) HandleTitle(ctx context.Context, payload []byte) bool {
	var m TitleMessage
	if err := json.Unmarshal(payload, &m); err != nil || !safeID(m.TraceID) {
		w.log.Error("dropping malformed title message", "payload", truncate(string(payload), 300), "error", err)
		return true
	}
	log := w.log.With("job", "title", "trace_id", m.TraceID, "revision", m.Revision)
	if w.cfg.Fast == nil {
		log.Warn("no fast model on this worker: the derived title stays", "reason", w.cfg.FastUnavailable)
		return true
	}
	var src jobs.TitleSource
	esc := url.PathEscape(m.TraceID)
	if err := w.client.post(ctx, jobs.TitleSourcePath(esc), jobs.TitleSourceRequest{WorkerID: w.client.WorkerID, Revision: m.Revision}, &src); err != nil {
		if ctx.Err() != nil {
			return false
		}
		log.Warn("title source unavailable; keeping the derived title", "error", err)
		return true
	}
	if !src.Needed {
		return true
	}
	res, err := w.cfg.Fast.Call(ctx, llm.Request{Name: "title", Instructions: domain.TitleInstructions, Input: src.Input, Schema: titleSchema, MaxTokens: 64})
	if err != nil {
		if ctx.Err() != nil {
			return false
		}
		log.Warn("title generation failed; keeping the derived title", "error", err)
		return true
	}
	var out struct {
		Title string `json:"title"`
	}
	_ = json.Unmarshal(res.JSON, &out)
	model := w.cfg.Fast.Model().String()
	u := res.Usage
	err = w.client.post(ctx, jobs.TitleRecordPath(esc), jobs.TitleReport{WorkerID: w.client.WorkerID, Revision: m.Revision, Title: out.Title, Model: model,
		Usage: []events.LLMUsage{{Model: model, Calls: u.Calls, InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CachedTokens: u.CachedTokens}}}, nil)
	if err != nil && ctx.Err() == nil {
		log.Warn("could not record the title", "error", err)
	}
	return ctx.Err() == nil
}
