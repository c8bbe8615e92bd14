package traces

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/labels"
)

// StepLabelsInput is a labeler's answer for a trace: labels for some of its
// chunks, made from revision Revision.
type StepLabelsInput struct {
	TraceID       string
	Revision      int
	Model         string
	PromptVersion string
	Labels        []labels.Label
	InputTokens   int
	OutputTokens  int
}

// DecideStepLabels checks a labeler's answer against the trace as it is now
// and returns the event that records it. The labels must describe the
// current revision (a trace that changed meanwhile is a conflict: label it
// again), name chunks of that revision by their ids with the chunk's actor,
// each at most once, and pass labels.Validate with references resolved
// against the whole trace. Nothing is recorded when any label is wrong.
func DecideStepLabels(s State, in StepLabelsInput) (events.TraceStepsLabeledV1, error) {
	if !s.Exists {
		return events.TraceStepsLabeledV1{}, domain.NotFound("trace", in.TraceID)
	}
	if in.Revision != s.Revision {
		return events.TraceStepsLabeledV1{}, &domain.ConflictError{Code: "stale_revision",
			Message: fmt.Sprintf("the labels describe revision %d but the trace is at revision %d; label the current revision", in.Revision, s.Revision)}
	}
	if len(in.Labels) == 0 {
		return events.TraceStepsLabeledV1{}, invalid("invalid_label", "labels", "no labels")
	}
	if in.Model == "" {
		return events.TraceStepsLabeledV1{}, invalid("invalid_label", "model", "the labeling model is required")
	}
	steps := s.StepList()
	chunks := labels.Chunks(steps)
	known := make(map[string]labels.Actor, len(chunks))
	pos := make(map[string]int, len(chunks))
	for i, c := range chunks {
		known[c.ID], pos[c.ID] = c.Actor, i
	}
	seen := map[string]bool{}
	for k, l := range in.Labels {
		field := "labels[" + strconv.Itoa(k) + "]"
		p, ok := pos[l.ChunkID]
		if !ok {
			return events.TraceStepsLabeledV1{}, invalid("invalid_label", field+".chunk_id", "chunk %q is not a chunk of revision %d", l.ChunkID, s.Revision)
		}
		if seen[l.ChunkID] {
			return events.TraceStepsLabeledV1{}, invalid("invalid_label", field+".chunk_id", "chunk %q is labeled twice", l.ChunkID)
		}
		seen[l.ChunkID] = true
		if l.Actor != chunks[p].Actor {
			return events.TraceStepsLabeledV1{}, invalid("invalid_label", field+".actor", "chunk %q is a %s chunk", l.ChunkID, chunks[p].Actor)
		}
		earlier := make(map[string]bool, p)
		for _, c := range chunks[:p] {
			earlier[c.ID] = true
		}
		if err := labels.Validate(l, known, earlier); err != nil {
			var v *domain.ValidationError
			if !errors.As(err, &v) {
				return events.TraceStepsLabeledV1{}, err
			}
			c := *v
			c.Field = field + "." + c.Field
			return events.TraceStepsLabeledV1{}, &c
		}
	}
	return events.TraceStepsLabeledV1{TraceID: in.TraceID, Revision: in.Revision, Model: in.Model, PromptVersion: in.PromptVersion,
		SchemaVersion: labels.SchemaVersion, Labels: in.Labels, InputTokens: in.InputTokens, OutputTokens: in.OutputTokens}, nil
}

// CurrentLabels is the chunk ids whose recorded label the labeler need not
// ask for again: every labeled chunk except those a rescore marked stale.
func (s State) CurrentLabels() map[string]bool {
	out := make(map[string]bool, len(s.Labeled))
	for id := range s.Labeled {
		if !s.Stale[id] {
			out[id] = true
		}
	}
	return out
}
