package usecase

import (
	"context"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/sections"
	"github.com/criticml/critic/projections/readmodel"
)

// AssessmentModelVar is the server role that makes section summaries and
// completion estimates: spec 001's "fast Anthropic model" (DESIGN §9).
const AssessmentModelVar = "CRITIC_FAST_MODEL"

// UnavailableReason is what the assessment endpoints say while no model
// can make assessments: the variable to set, never a made-up answer.
const UnavailableReason = "section summaries and completion estimates need the fast model: set " + AssessmentModelVar +
	" and its provider's API key (default anthropic/claude-haiku-4-5: ANTHROPIC_API_KEY) on the server and the workers"

// SectionRequest is one range to assess with the evidence it is assessed
// from and that evidence's hash (the cache key with the version).
type SectionRequest struct {
	Range        sections.Resolved
	Preceding    []int
	Inside       []int
	EvidenceHash string
}

// CompletionRequest is a whole trace's completion estimate: the independent
// requests (top-level graded sections), the sampled evidence and its hash.
type CompletionRequest struct {
	Tasks        []sections.Section
	Evidence     []int
	EvidenceHash string
}

// Assessments is where model-made section summaries and completion
// estimates come from (Generator: a cache keyed by trace, evidence hash,
// exact ranges and version, a lease against concurrent generation, and
// generation in the worker tier). A call returns what is cached, queues
// what is missing (pending) and reports failed generation (unavailable,
// with the reason); it never calls a model in the request.
type Assessments interface {
	Sections(ctx context.Context, owner, traceID string, steps []domain.Step, ids []string, req []SectionRequest) (got []sections.Summary, pending bool, unavailable *string, err error)
	Completion(ctx context.Context, owner, traceID string, steps []domain.Step, ids []string, req CompletionRequest) (tasks []sections.CompletionTask, pending bool, unavailable *string, err error)
}

// SectionSummaries is POST /traces/{id}/section-summaries' answer.
type SectionSummaries struct {
	Sections          []sections.Summary `json:"sections"`
	Pending           bool               `json:"pending"`
	Unavailable       bool               `json:"unavailable"`
	UnavailableReason *string            `json:"unavailable_reason"`
}

// Completion is POST /traces/{id}/completion's answer.
type Completion struct {
	Tasks             []sections.CompletionTask `json:"tasks"`
	Pending           bool                      `json:"pending"`
	Unavailable       bool                      `json:"unavailable"`
	UnavailableReason *string                   `json:"unavailable_reason"`
}

// loadTrace checks ownership (another owner's trace is not found) and
// returns the trace's steps as the domain reads them.
func loadTrace(ctx context.Context, q *readmodel.Queries, owner, traceID string) ([]domain.Step, []string, *readmodel.TraceDetail, error) {
	d, err := q.GetTrace(ctx, owner, traceID)
	if err != nil {
		return nil, nil, nil, err
	}
	steps := make([]domain.Step, len(d.Steps))
	ids := make([]string, len(d.Steps))
	for i, s := range d.Steps {
		st, err := readmodel.DomainStep(s)
		if err != nil {
			return nil, nil, nil, err
		}
		steps[i], ids[i] = st, s.ID
	}
	return steps, ids, d, nil
}

// AssessSections answers a section-summaries request: the owner check and
// range membership come first, before anything is read from a cache or
// asked of a model; without a model every range is unavailable (null
// fields, the reason naming the variable to set).
func AssessSections(ctx context.Context, q *readmodel.Queries, gen Assessments, owner, traceID string, ranges []sections.Range) (*SectionSummaries, error) {
	steps, ids, _, err := loadTrace(ctx, q, owner, traceID)
	if err != nil {
		return nil, err
	}
	resolved, err := sections.ResolveRanges(ids, ranges)
	if err != nil {
		return nil, err
	}
	if gen == nil {
		reason := UnavailableReason
		out := &SectionSummaries{Sections: make([]sections.Summary, len(resolved)), Unavailable: true, UnavailableReason: &reason}
		for i, r := range resolved {
			out.Sections[i] = sections.Summary{FirstStepID: r.FirstStepID, LastStepID: r.LastStepID, Reason: &reason}
		}
		return out, nil
	}
	req := make([]SectionRequest, len(resolved))
	for i, r := range resolved {
		pre, in := sections.SectionEvidence(steps, r.First, r.Last)
		req[i] = SectionRequest{Range: r, Preceding: pre, Inside: in,
			EvidenceHash: sections.EvidenceHash(sections.SectionAssessmentVersion, steps, ids, pre, in)}
	}
	got, pending, unavailable, err := gen.Sections(ctx, owner, traceID, steps, ids, req)
	if err != nil {
		return nil, err
	}
	if got == nil {
		got = []sections.Summary{}
	}
	// Context is never graded, whatever a cache holds.
	for i := range got {
		if i < len(resolved) && got[i].Score != nil && !sections.Gradable(steps, resolved[i].First, resolved[i].Last) {
			got[i].Score = nil
		}
	}
	return &SectionSummaries{Sections: got, Pending: pending, Unavailable: unavailable != nil, UnavailableReason: unavailable}, nil
}

// EstimateCompletion answers a completion request the same way: owner
// check first, then the cache (through gen) or unavailable. Without a model
// the independent requests are still listed (their ranges are facts), with
// no objective and no checkpoints.
func EstimateCompletion(ctx context.Context, q *readmodel.Queries, gen Assessments, owner, traceID string) (*Completion, error) {
	steps, ids, d, err := loadTrace(ctx, q, owner, traceID)
	if err != nil {
		return nil, err
	}
	var tasks []sections.Section
	for _, s := range d.Sections {
		if s.Graded {
			tasks = append(tasks, s)
		}
	}
	if gen == nil {
		reason := UnavailableReason
		out := &Completion{Tasks: make([]sections.CompletionTask, len(tasks)), Unavailable: true, UnavailableReason: &reason}
		for i, t := range tasks {
			out.Tasks[i] = sections.CompletionTask{FirstStepID: t.FirstStepID, LastStepID: t.LastStepID, Checkpoints: []sections.Checkpoint{}}
		}
		return out, nil
	}
	ev := sections.CompletionEvidence(steps)
	got, pending, unavailable, err := gen.Completion(ctx, owner, traceID, steps, ids, CompletionRequest{Tasks: tasks, Evidence: ev,
		EvidenceHash: sections.EvidenceHash(sections.CompletionVersion, steps, ids, ev)})
	if err != nil {
		return nil, err
	}
	if got == nil {
		got = []sections.CompletionTask{}
	}
	return &Completion{Tasks: got, Pending: pending, Unavailable: unavailable != nil, UnavailableReason: unavailable}, nil
}
