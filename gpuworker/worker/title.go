package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/platform/llm"
)

var titleSchema = llm.Object(map[string]*llm.Schema{"title": llm.String("the title, at most 8 words")})

// titles titles one trace revision with the fast model. A failure is
// logged and dropped: the derived title stays, and imports never depend on
// a model.
var titles = register(Kind[jobs.TitleJob, jobs.TitleSource, jobs.TitleReport]{
	Consume: short,
	Kind:    jobs.KindTitle, What: "title job", IDKey: "trace_id",
	Ready: func(w *Worker) error {
		if w.cfg.Fast == nil {
			return errors.New("no fast model on this worker: the derived title stays (" + w.cfg.FastUnavailable + ")")
		}
		return nil
	},
	Work: func(ctx context.Context, j *Job[jobs.TitleSource]) (jobs.TitleReport, error) {
		if !j.Args.Needed {
			return jobs.TitleReport{}, Cancel(slog.LevelDebug, errors.New("the revision needs no title"))
		}
		fast := j.w.cfg.Fast
		res, err := fast.Call(ctx, llm.Request{Name: "title", Instructions: domain.TitleInstructions, Input: j.Args.Input, Schema: titleSchema, MaxTokens: 64})
		if err != nil {
			if ctx.Err() != nil {
				return jobs.TitleReport{}, RetryLater(err)
			}
			return jobs.TitleReport{}, Cancel(slog.LevelWarn, fmt.Errorf("title generation failed; keeping the derived title: %w", err))
		}
		var out struct {
			Title string `json:"title"`
		}
		_ = json.Unmarshal(res.JSON, &out)
		model := fast.Model().String()
		return jobs.TitleReport{Title: out.Title, Model: model, Usage: []events.LLMUsage{usageOf(model, res.Usage)}}, nil
	},
})
