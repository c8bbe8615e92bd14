package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/labels"
	"github.com/criticml/critic/gpuworker/label"
	"github.com/criticml/critic/platform/llm"
	"github.com/criticml/critic/platform/requestid"
)

// TopicLabel carries step-label jobs (domain/jobs).
const TopicLabel = jobs.TopicLabel

// HandleLabel runs one critic.jobs.label message: it asks the worker
// service what the revision still needs (nothing, for a stale, duplicate
// or replayed job), labels those chunks with the step-label model, reports
// the labels in batches as they arrive (progress shows on GET
// /traces/{id}), and reports the chunks it could not label as a labeling
// failure the owner can retry. It returns false only when ctx ended
// mid-job (leave the message unacknowledged).
func (w *Worker) HandleLabel(ctx context.Context, payload []byte) bool {
	var m jobs.LabelJob
	if err := json.Unmarshal(payload, &m); err != nil || !safeID(m.TraceID) {
		w.log.Error("dropping malformed label message", "payload", truncate(string(payload), 300), "error", err)
		return true
	}
	log := w.log.With(withRequestID(ctx, "job", "label", "trace_id", m.TraceID, "revision", m.Revision)...)
	if w.cfg.StepLabel == nil {
		log.Warn("no step-label model on this worker: the trace stays unlabeled", "reason", w.cfg.StepLabelUnavailable)
		return true
	}
	ctx, endJob := w.cfg.Observer.JobStarted(ctx, "label", requestid.From(ctx))
	outcome, jobErr := "failed", error(nil)
	defer func() { endJob(outcome, jobErr) }()
	esc := url.PathEscape(m.TraceID)
	src, err := retry(ctx, w.cfg.ReportRetryFor, log, "fetching the label source", func(ctx context.Context) (jobs.LabelSource, error) {
		var s jobs.LabelSource
		err := w.client.post(ctx, jobs.LabelSourcePath(esc), jobs.LabelSourceRequest{WorkerID: w.client.WorkerID, Revision: m.Revision}, &s)
		return s, err
	})
	switch {
	case ctx.Err() != nil:
		outcome = "interrupted"
		return false
	case errors.Is(err, ErrNotClaimable):
		outcome = "refused"
		return true
	case err != nil:
		// Not a passing outage (those were retried): say so on the trace, so
		// it shows failed and retryable instead of queued for ever.
		outcome, jobErr = "refused", err
		w.reportLabelFailure(ctx, log, esc, m.Revision, w.cfg.StepLabel.Model(), 1, "the label source could not be read: "+err.Error())
		return ctx.Err() == nil
	case !src.Needed:
		outcome = "refused"
		log.Info("nothing to label for this revision")
		return w.qualityCheck(ctx, log, esc, m.Revision)
	}
	have := make(map[string]bool, len(src.Labeled))
	for _, id := range src.Labeled {
		have[id] = true
	}
	model := w.cfg.StepLabel.Model()
	report := func(ctx context.Context, batch []labels.Label, u llm.Usage) error {
		_, err := retry(ctx, w.cfg.ReportRetryFor, log, "recording labels", func(ctx context.Context) (struct{}, error) {
			return struct{}{}, w.client.post(ctx, jobs.LabelRecordPath(esc), jobs.LabelReport{WorkerID: w.client.WorkerID, Revision: m.Revision,
				Model: model, PromptVersion: labels.PromptVersion, Labels: batch,
				Usage: events.LLMUsage{Model: model, Calls: u.Calls, InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CachedTokens: u.CachedTokens}}, nil)
		})
		return err
	}
	res, err := w.cfg.StepLabel.Label(ctx, src.Steps, have, report)
	log = log.With("targets", res.Targets, "labeled", res.Labeled, "failed", len(res.Failed), "calls", res.Usage.Calls)
	switch {
	case ctx.Err() != nil:
		outcome = "interrupted"
		return false
	case errors.Is(err, ErrNotClaimable):
		// The trace changed while it was labeled: the new revision has a job
		// of its own; the labels recorded so far keep (chunk ids are stable).
		outcome = "lease_lost"
		log.Info("the trace changed while it was labeled; its new revision is queued", "detail", err.Error())
		return true
	case err != nil:
		jobErr = err
		w.reportLabelFailure(ctx, log, esc, m.Revision, model, max(1, res.Targets-res.Labeled), "recording labels failed: "+err.Error())
		return ctx.Err() == nil
	case len(res.Failed) > 0:
		jobErr = res.Err
		w.reportLabelFailure(ctx, log, esc, m.Revision, model, len(res.Failed),
			fmt.Sprintf("%d of %d chunks could not be labeled: %v", len(res.Failed), res.Targets, res.Err))
		return ctx.Err() == nil
	}
	outcome = "succeeded"
	log.Info("trace labeled")
	return w.qualityCheck(ctx, log, esc, m.Revision)
}

func (w *Worker) reportLabelFailure(ctx context.Context, log interface{ Warn(string, ...any) }, esc string, revision int, model string, failed int, msg string) {
	log.Warn("labeling failed", "error", msg)
	_, err := retry(ctx, w.cfg.ReportRetryFor, w.log, "reporting a labeling failure", func(ctx context.Context) (struct{}, error) {
		return struct{}{}, w.client.post(ctx, jobs.LabelFailedPath(esc), jobs.LabelFailure{WorkerID: w.client.WorkerID, Revision: revision,
			Model: model, Failed: failed, Error: msg}, nil)
	})
	if err != nil && ctx.Err() == nil {
		log.Warn("could not report the labeling failure", "error", err)
	}
}

// NewLabeler is the step labeler a worker runs with a step-label model.
func NewLabeler(c *llm.Client) *label.Labeler { return label.New(c, labels.DefaultLimits) }
