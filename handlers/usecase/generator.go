package usecase

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/sections"
)

// Generator is the Assessments of a deployment with a fast model. A request
// reads the cache (rm_assessments) by each item's key — trace, evidence
// hash, exact ranges, version — and answers from it; what is missing, or
// whose lease ran out, is recorded as one trace.assessment_requested event
// (the dispatch projection queues it for the worker tier, which calls the
// model and reports through the worker service) and answered pending. A key
// whose lease still runs is pending without a new request, so concurrent
// polls generate once; an answered key is never generated again; a failed
// one answers unavailable with its reason until its retry delay passes.
type Generator struct {
	Backend Backend
}

// request records the missing items and waits (bounded) for the read model
// to show them pending, so the next poll does not ask again.
func (g *Generator) request(ctx context.Context, owner, traceID, kind string, items []events.AssessmentItem) error {
	res, err := g.Backend.Cmds.RequestAssessment.Handle(ctx, commands.RequestAssessment{Actor: commands.Actor{UserID: owner}, TraceID: traceID, Kind: kind, Items: items})
	if err != nil {
		return err
	}
	var lag *domain.UnavailableError
	if err := g.Backend.Settle(ctx, res); err != nil && !errors.As(err, &lag) {
		return err
	}
	return nil
}

// Sections implements Assessments.
func (g *Generator) Sections(ctx context.Context, owner, traceID string, steps []domain.Step, ids []string, req []SectionRequest) ([]sections.Summary, bool, *string, error) {
	keys := make([]string, len(req))
	for i, r := range req {
		keys[i] = sections.SectionKey(r.EvidenceHash, r.Range.Range)
	}
	cached, err := g.Backend.Queries.Assessments(ctx, traceID, events.AssessmentSections, keys)
	if err != nil {
		return nil, false, nil, err
	}
	out := make([]sections.Summary, len(req))
	var missing []events.AssessmentItem
	pending := false
	var unavailable *string
	for i, r := range req {
		out[i] = sections.Summary{FirstStepID: r.Range.FirstStepID, LastStepID: r.Range.LastStepID}
		c, ok := cached[keys[i]]
		switch {
		case ok && c.State == "done":
			var s sections.Summary
			if json.Unmarshal(c.Result, &s) == nil && s.FirstStepID == r.Range.FirstStepID && s.LastStepID == r.Range.LastStepID {
				out[i] = s
				continue
			}
			fallthrough
		case !ok || !c.Leased:
			rng := r.Range.Range
			missing = append(missing, events.AssessmentItem{Key: keys[i], EvidenceHash: r.EvidenceHash, Range: &rng})
			pending = true
		case c.State == "failed":
			msg := c.Error
			out[i].Reason = &msg
			unavailable = &msg
		default: // pending, lease running
			pending = true
		}
	}
	if len(missing) > 0 {
		if err := g.request(ctx, owner, traceID, events.AssessmentSections, missing); err != nil {
			return nil, false, nil, err
		}
	}
	return out, pending, unavailable, nil
}

// Completion implements Assessments.
func (g *Generator) Completion(ctx context.Context, owner, traceID string, steps []domain.Step, ids []string, req CompletionRequest) ([]sections.CompletionTask, bool, *string, error) {
	tasks := make([]sections.Range, len(req.Tasks))
	listed := make([]sections.CompletionTask, len(req.Tasks))
	for i, t := range req.Tasks {
		tasks[i] = sections.Range{FirstStepID: t.FirstStepID, LastStepID: t.LastStepID}
		listed[i] = sections.CompletionTask{FirstStepID: t.FirstStepID, LastStepID: t.LastStepID, Checkpoints: []sections.Checkpoint{}}
	}
	if len(tasks) == 0 {
		return listed, false, nil, nil
	}
	key := sections.CompletionKey(req.EvidenceHash, tasks)
	cached, err := g.Backend.Queries.Assessments(ctx, traceID, events.AssessmentCompletion, []string{key})
	if err != nil {
		return nil, false, nil, err
	}
	c, ok := cached[key]
	switch {
	case ok && c.State == "done":
		var got []sections.CompletionTask
		if json.Unmarshal(c.Result, &got) == nil && sections.MatchesTasks(tasks, got) == nil {
			return got, false, nil, nil
		}
	case ok && c.Leased && c.State == "failed":
		msg := c.Error
		return listed, false, &msg, nil
	case ok && c.Leased:
		return listed, true, nil, nil
	}
	if err := g.request(ctx, owner, traceID, events.AssessmentCompletion, []events.AssessmentItem{{Key: key, EvidenceHash: req.EvidenceHash, Tasks: tasks}}); err != nil {
		return nil, false, nil, err
	}
	return listed, true, nil, nil
}
