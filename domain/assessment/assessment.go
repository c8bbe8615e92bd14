// Package assessment composes the automatic annotation of one trace from
// its labels: the labeling (domain/labels), the step scores
// (domain/stepscores) and the sections (domain/sections), in the shapes the
// API returns (`steps[].metadata.reward`, `step_scores`, `sections`) and the
// rows the /query snapshot stores. Every reader — the REST and Connect trace
// detail, the DuckDB snapshot — calls Of, so they cannot disagree. Pure.
package assessment

import (
	"cmp"
	"encoding/json"
	"maps"
	"slices"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/labels"
	"github.com/criticml/critic/domain/sections"
	"github.com/criticml/critic/domain/stepscores"
)

// RubricSummaryKey is the trace metadata key of an imported trace's own
// task scores (spec 001: "an imported trace may carry both").
const RubricSummaryKey = "rubric_summary"

// RewardKey is where a step's score breakdown lives: `steps[].metadata.reward`.
const RewardKey = "reward"

// Sources of step_scores.
const (
	SourceLabels   = "labels"   // computed here from the step labels
	SourceImported = "imported" // the trace's own metadata.rubric_summary
)

// Task is one entry of step_scores.tasks.
type Task struct {
	TaskID       string   `json:"task_id"`
	FirstStepID  string   `json:"first_step_id"`
	LastStepID   string   `json:"last_step_id"`
	AnswerStepID *string  `json:"answer_step_id"`
	AnswerPoints *float64 `json:"answer_points"`
	Work         float64  `json:"work"`
	Score        float64  `json:"score"`
	Capped       bool     `json:"capped"`
	// Step indices, for the snapshot rows; not part of the API shape.
	FirstIndex  int  `json:"-"`
	LastIndex   int  `json:"-"`
	AnswerIndex *int `json:"-"`
}

// StepScores is `step_scores` on GET /traces/{id}: the task scores, the
// trace score (mean of the task scores) and the outcome.
type StepScores struct {
	Policy     string           `json:"policy"`
	Source     string           `json:"source"`
	TraceScore *float64         `json:"trace_score"`
	Outcome    string           `json:"outcome"`
	Tasks      []Task           `json:"tasks"`
	Problems   []labels.Problem `json:"problems"`
}

// Assessment is everything the automatic annotation derives for one trace.
type Assessment struct {
	Labels labels.Labeling
	// Rewards[i] is the breakdown to show as steps[i].metadata.reward: the
	// computed one, or the imported one (with expected_credit derived when it
	// carries probabilities), nil for steps without one.
	Rewards []map[string]any
	// StepScores is nil when the trace has no labels (the step-label model
	// would have to label it first) and no imported rubric summary.
	StepScores *StepScores
	Sections   []sections.Section
	Labeling   LabelingStatus
}

// Of assesses a trace: steps and their ids in order, the trace metadata,
// the labels a labeling model recorded for it by chunk id (nil: none), and
// the quality checks a grading model answered by chunk id (nil: none, the
// rules alone; see stepscores.ScoreWith).
func Of(steps []domain.Step, ids []string, meta map[string]any, stored map[string]labels.Label, checks map[string]stepscores.Check) Assessment {
	lab := labels.FromSteps(steps, stored)
	a := Assessment{Labels: lab, Rewards: make([]map[string]any, len(steps)), Sections: sections.Build(steps, ids, lab),
		Labeling: Status(steps, lab)}
	res := stepscores.ScoreWith(lab.Chunks, lab.Labels, checks)
	for ci, r := range res.Steps {
		if r == nil {
			continue
		}
		a.Rewards[lab.Chunks[ci].Steps[0]] = toMap(r)
	}
	// Imported breakdowns are kept as they are; a classifier distribution
	// they carry gets its expected credit beside it.
	for i, s := range steps {
		imp, ok := s.Metadata[RewardKey].(map[string]any)
		if !ok {
			continue
		}
		out := maps.Clone(imp)
		if _, has := out["expected_credit"]; !has {
			if p, ok := probabilities(imp["probabilities"]); ok {
				if ec, ok := stepscores.ExpectedCredit(p); ok {
					out["expected_credit"] = ec
				} else {
					out["expected_credit"] = nil
				}
			}
		}
		a.Rewards[i] = out
	}
	if imported, ok := rubricSummary(meta, ids); ok {
		imported.Problems = lab.Problems
		if imported.Problems == nil {
			imported.Problems = []labels.Problem{}
		}
		a.StepScores = imported
		return a
	}
	if !lab.Present {
		return a
	}
	ss := &StepScores{Policy: res.Policy, Source: SourceLabels, TraceScore: res.TraceScore, Outcome: res.Outcome,
		Tasks: []Task{}, Problems: lab.Problems}
	if ss.Problems == nil {
		ss.Problems = []labels.Problem{}
	}
	for _, t := range res.Tasks {
		first := lab.Chunks[t.FirstChunk].Steps[0]
		last := slices.Max(lab.Chunks[t.LastChunk].Steps)
		task := Task{TaskID: t.TaskID, FirstStepID: ids[first], LastStepID: ids[last], AnswerPoints: t.AnswerPoints,
			Work: t.Work, Score: t.Score, Capped: t.Capped, FirstIndex: first, LastIndex: last}
		if ci := slices.IndexFunc(lab.Labels, func(l *labels.Label) bool { return l != nil && l.ChunkID == t.AnswerChunk }); ci >= 0 && t.AnswerChunk != "" {
			idx := lab.Chunks[ci].Steps[0]
			task.AnswerIndex, task.AnswerStepID = &idx, &ids[idx]
		}
		ss.Tasks = append(ss.Tasks, task)
	}
	a.StepScores = ss
	return a
}

// rubricSummary reads an imported metadata.rubric_summary in the shape of
// step_scores. One that does not have that shape is not used (the labels are
// scored instead), so a malformed import cannot show made-up numbers.
func rubricSummary(meta map[string]any, ids []string) (*StepScores, bool) {
	raw, ok := meta[RubricSummaryKey]
	if !ok || raw == nil {
		return nil, false
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, false
	}
	var ss StepScores
	if err := json.Unmarshal(b, &ss); err != nil {
		return nil, false
	}
	switch ss.Outcome {
	case stepscores.OutcomeSuccess, stepscores.OutcomePartialSuccess, stepscores.OutcomeFailure, stepscores.OutcomeInsufficientEvidence:
	default:
		return nil, false
	}
	if ss.TraceScore != nil && (*ss.TraceScore < -1 || *ss.TraceScore > 1) {
		return nil, false
	}
	at := make(map[string]int, len(ids))
	for i, id := range ids {
		at[id] = i
	}
	for k := range ss.Tasks {
		t := &ss.Tasks[k]
		if t.Score < -1 || t.Score > 1 {
			return nil, false
		}
		// Step references that name steps of this trace are located; others
		// (an offline run's own ids) stay as recorded.
		t.FirstIndex, t.LastIndex = -1, -1
		if i, ok := at[t.FirstStepID]; ok {
			t.FirstIndex = i
		}
		if i, ok := at[t.LastStepID]; ok {
			t.LastIndex = i
		}
		if t.AnswerStepID != nil {
			if i, ok := at[*t.AnswerStepID]; ok {
				t.AnswerIndex = &i
			}
		}
	}
	if ss.Tasks == nil {
		ss.Tasks = []Task{}
	}
	ss.Policy = cmp.Or(ss.Policy, "imported")
	ss.Source = SourceImported
	return &ss, true
}

// probabilities reads a classifier distribution {label: probability}.
func probabilities(v any) (map[string]float64, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, false
	}
	out := make(map[string]float64, len(m))
	for k, x := range m {
		switch n := x.(type) {
		case float64:
			out[k] = n
		case json.Number:
			f, err := n.Float64()
			if err != nil {
				return map[string]float64{"": -1}, true // malformed: unscored
			}
			out[k] = f
		default:
			return map[string]float64{"": -1}, true
		}
	}
	return out, true
}

func toMap(r *stepscores.StepReward) map[string]any {
	b, _ := json.Marshal(r) // plain struct of numbers and strings
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}

// ModelLabels places the labels a labeling model recorded on the steps
// they describe: out[i] is the label of the chunk whose first step is i,
// when that chunk's label came from a model rather than from the steps' own
// metadata (an import, which wins), nil otherwise. Only labels that
// validated — those the scores are computed from — are placed.
func (a Assessment) ModelLabels() []*labels.Label {
	out := make([]*labels.Label, len(a.Rewards))
	for ci, l := range a.Labels.Labels {
		if l != nil && !a.Labels.Imported[ci] {
			out[a.Labels.Chunks[ci].Steps[0]] = l
		}
	}
	return out
}

// Row is one labeled chunk as the /query snapshot's step_labels table holds
// it: the label's fields with the step's score, ordinal credit and expected
// credit (nil when the step has no distribution).
type Row struct {
	StepIndex      int
	StepID         string
	Label          labels.Label
	Score          *float64
	Credit         *int
	ExpectedCredit *float64
}

// Rows lists the labeled chunks of an assessment, in trace order, with the
// score shown on the chunk's first step (computed or imported).
func (a Assessment) Rows(ids []string) []Row {
	var out []Row
	for ci, l := range a.Labels.Labels {
		if l == nil {
			continue
		}
		i := a.Labels.Chunks[ci].Steps[0]
		row := Row{StepIndex: i, StepID: ids[i], Label: *l}
		if r := a.Rewards[i]; r != nil {
			row.Score = number(r["score"])
			if c := number(r["credit"]); c != nil {
				row.Credit = new(int(*c))
			}
			row.ExpectedCredit = number(r["expected_credit"])
		}
		out = append(out, row)
	}
	return out
}

func number(v any) *float64 {
	switch n := v.(type) {
	case float64:
		return &n
	case int:
		return new(float64(n))
	case json.Number:
		if f, err := n.Float64(); err == nil {
			return &f
		}
	}
	return nil
}

// The states of a trace's labeling.
const (
	// LabelingImported: the trace carries its own labels (an offline run).
	LabelingImported = "imported"
	// LabelingLabeled: every complete chunk has a label.
	LabelingLabeled = "labeled"
	// LabelingPartial: some chunks have labels, others not yet.
	LabelingPartial = "partial"
	// LabelingWaiting: the agent has not responded yet; nothing to label.
	LabelingWaiting = "waiting"
	// LabelingUnlabeled: no labels at all.
	LabelingUnlabeled = "unlabeled"
	// LabelingQueued: chunks still need labels and the step-label model
	// is configured: the labeler has them queued or is working on them.
	LabelingQueued = "queued"
	// LabelingFailed: the labeler's last run on this revision could not
	// label some chunks; Reason says why; POST /traces/{id}/labeling/retry
	// asks again for the chunks still missing.
	LabelingFailed = "failed"
)

// UnlabeledReason says where labels come from, naming the variable that
// turns on the step-label model.
const UnlabeledReason = "no step labels: import the trace with steps[].metadata.label, or set CRITIC_STEP_LABEL_MODEL so the step-label model labels it"

// LabelingStatus is `labeling` on GET /traces/{id}: how far the trace's
// labeling got, so a missing score is never a mystery.
type LabelingStatus struct {
	State string `json:"state"`
	// Chunks is how many chunks the trace has; Labeled how many carry a
	// usable label; ToLabel how many complete chunks still have none or,
	// after a rescore, await their new one.
	Chunks  int     `json:"chunks"`
	Labeled int     `json:"labeled"`
	ToLabel int     `json:"to_label"`
	Reason  *string `json:"reason"`
	// Model is the step-label model that labels the trace (or failed to,
	// and that a rescore asks); null when none is configured or the trace
	// carries its own labels.
	Model *string `json:"model"`
	// Retryable is true when POST /traces/{id}/labeling/retry would queue
	// the missing chunks again (a failed run).
	Retryable bool `json:"retryable"`
}

// WithRun adds what the labeler is doing to the status of a trace that
// still misses labels (state unlabeled or partial): queued for model when
// the deployment has one, failed with failure (the last run's reason) when
// that run failed. Without a model and without a failure the status stays
// as Status made it, naming the variable to set.
func WithRun(st LabelingStatus, model string, failure *string) LabelingStatus {
	if model != "" && st.State != LabelingImported {
		st.Model = &model // the model a rescore (POST /traces/{id}/labeling/rescore) would ask
	}
	if st.State != LabelingUnlabeled && st.State != LabelingPartial {
		return st
	}
	switch {
	case failure != nil:
		st.State, st.Reason, st.Retryable = LabelingFailed, failure, model != ""
	case model != "":
		st.State, st.Reason = LabelingQueued, nil
	}
	return st
}

// Relabeling adds a rescore in progress to a status: the model-made labels
// of complete chunks in stale (the chunk ids a rescore asked to label anew
// that have no new label yet) count as still to label, so a labeled trace
// reads partial — queued once WithRun adds the model — until every new
// label is in. The stale labels still score the trace meanwhile. Imported
// labels are never relabeled.
func Relabeling(st LabelingStatus, lab labels.Labeling, stale map[string]bool) LabelingStatus {
	if len(stale) == 0 || st.State == LabelingImported || st.State == LabelingWaiting {
		return st
	}
	n := 0
	for ci, l := range lab.Labels {
		if c := lab.Chunks[ci]; l != nil && !lab.Imported[ci] && c.Complete && stale[c.ID] {
			n++
		}
	}
	if n == 0 {
		return st
	}
	st.ToLabel += n
	if st.State == LabelingLabeled {
		st.State = LabelingPartial
	}
	return st
}

// Status reports the labeling of a trace from its steps and its labeling.
func Status(steps []domain.Step, lab labels.Labeling) LabelingStatus {
	st := LabelingStatus{Chunks: len(lab.Chunks)}
	imported := false
	for ci, c := range lab.Chunks {
		if lab.Labels[ci] != nil {
			st.Labeled++
			for _, si := range c.Steps {
				if _, ok := steps[si].Metadata[labels.MetadataKey]; ok {
					imported = true
				}
			}
		} else if c.Complete {
			st.ToLabel++
		}
	}
	switch {
	case imported:
		st.State = LabelingImported
	case !labels.AgentResponded(steps):
		st.State = LabelingWaiting
	case st.Labeled == 0:
		st.State = LabelingUnlabeled
		st.Reason = new(UnlabeledReason)
	case st.ToLabel == 0:
		st.State = LabelingLabeled
	default:
		st.State = LabelingPartial
	}
	return st
}
