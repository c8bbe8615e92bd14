package traces

import (
	"fmt"
	"strconv"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/labels"
	"github.com/criticml/critic/domain/stepscores"
)

// QualityChecksInput is a grader's answers for a trace: checks of some of
// its open steps, made from revision Revision.
type QualityChecksInput struct {
	TraceID       string
	Revision      int
	Model         string
	PromptVersion string
	Checks        []stepscores.Check
	InputTokens   int
	OutputTokens  int
}

// OpenChecks are the steps of a trace a grader may ask about now, by chunk
// id with their questions: the open steps (stepscores.OpenSteps) of its
// model-made labels. A trace that carries its own labels has none: an
// offline run's labels are used as they are and never sent to a model.
func OpenChecks(s State) map[string]stepscores.Question {
	steps := s.StepList()
	if labels.FromSteps(steps, nil).Present {
		return map[string]stepscores.Question{}
	}
	return stepscores.OpenSteps(labels.FromSteps(steps, s.StepLabels).Labels)
}

// DecideQualityChecks checks a grader's answers against the trace as it is
// now and returns the event that records them. They must describe the
// current revision, each name an open step of it at most once with the
// question that step is open to, and give a well-formed distribution over
// that question's options (stepscores.Blend). Nothing is recorded when any
// check is wrong.
func DecideQualityChecks(s State, in QualityChecksInput) (events.TraceStepsQualityCheckedV1, error) {
	var none events.TraceStepsQualityCheckedV1
	if !s.Exists {
		return none, domain.NotFound("trace", in.TraceID)
	}
	if in.Revision != s.Revision {
		return none, &domain.ConflictError{Code: "stale_revision",
			Message: fmt.Sprintf("the quality checks describe revision %d but the trace is at revision %d; check the current revision", in.Revision, s.Revision)}
	}
	if len(in.Checks) == 0 {
		return none, invalid("invalid_quality_check", "checks", "no checks")
	}
	if in.Model == "" {
		return none, invalid("invalid_quality_check", "model", "the grading model is required")
	}
	open := OpenChecks(s)
	seen := map[string]bool{}
	out := make([]stepscores.Check, 0, len(in.Checks))
	for k, c := range in.Checks {
		field := "checks[" + strconv.Itoa(k) + "]"
		q, ok := open[c.ChunkID]
		if !ok {
			return none, invalid("invalid_quality_check", field+".chunk_id",
				"chunk %q is not an open step of revision %d (only tool calls, questions and answers nobody reacted to are checked)", c.ChunkID, s.Revision)
		}
		if seen[c.ChunkID] {
			return none, invalid("invalid_quality_check", field+".chunk_id", "chunk %q is checked twice", c.ChunkID)
		}
		seen[c.ChunkID] = true
		if c.Question != q.ID {
			return none, invalid("invalid_quality_check", field+".question", "chunk %q is open to question %q, not %q", c.ChunkID, q.ID, c.Question)
		}
		if _, ok := stepscores.Blend(q, c.Probabilities); !ok {
			return none, invalid("invalid_quality_check", field+".probabilities", "give each option of %s a probability in 0..1, summing to 1", q.ID)
		}
		c.Model = "" // recorded once, on the event
		out = append(out, c)
	}
	return events.TraceStepsQualityCheckedV1{TraceID: in.TraceID, Revision: in.Revision, Model: in.Model, PromptVersion: in.PromptVersion,
		Policy: stepscores.CheckPolicy, Checks: out, InputTokens: in.InputTokens, OutputTokens: in.OutputTokens}, nil
}
