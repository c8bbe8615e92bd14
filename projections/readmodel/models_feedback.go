package readmodel

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/platform/pg"
)

// LLMUsage is what a model's extraction cost with one LLM.
type LLMUsage struct {
	Model        string `json:"model"`
	Calls        int    `json:"calls"`
	InputTokens  int64  `json:"input_tokens"`
	OutputTokens int64  `json:"output_tokens"`
	CachedTokens int64  `json:"cached_input_tokens"`
}

// FeedbackEntry is one entry of RewardModelDetail.feedback: spec 001's
// fields, then the finding's provenance.
type FeedbackEntry struct {
	TraceID            string                `json:"trace_id"`
	StepIndex          int                   `json:"step_index"`
	Label              string                `json:"label"`
	Confidence         string                `json:"confidence"`
	Source             string                `json:"source"`
	EvidenceID         *string               `json:"evidence_id"`
	EvidenceQuote      *string               `json:"evidence_quote"`
	Reason             string                `json:"reason"`
	ClassifierModel    string                `json:"classifier_model"`
	IncludedInTraining bool                  `json:"included_in_training"`
	ID                 string                `json:"id"`
	StepID             string                `json:"step_id"`
	ToolName           *string               `json:"tool_name"`
	Outcome            string                `json:"outcome"`
	PromptVersion      string                `json:"prompt_version"`
	Criteria           []string              `json:"criteria"`
	OriginalAction     string                `json:"original_action"`
	AlternativeAction  *string               `json:"alternative_action"`
	Review             *events.FindingReview `json:"review"`
	Usage              *events.LLMUsage      `json:"usage"`
	// IncludedInEvaluation: the finding's pairs landed on the held-out side
	// of the training split (spec 001 learning report), so they measure the
	// model rather than train it.
	IncludedInEvaluation bool `json:"included_in_evaluation"`
	// Erased: the finding's trace was deleted; the fields that quoted it
	// (evidence, reason, actions, review) are empty, the rest stays.
	Erased bool `json:"erased"`
}

// feedbackOf fills a detail's learning report and usage.
func (q *Queries) feedbackOf(ctx context.Context, d *RewardModelDetail) error {
	var recorded bool
	err := q.pool.QueryRow(ctx, `SELECT feedback_recorded, feedback_unavailable FROM rm_reward_models WHERE id = $1`, d.ID).
		Scan(&recorded, &d.FeedbackUnavailable)
	if err != nil {
		return err
	}
	d.LLMUsage, err = pg.Append(ctx, q.pool, []LLMUsage{}, func(r pgx.CollectableRow) (u LLMUsage, err error) {
		err = r.Scan(&u.Model, &u.Calls, &u.InputTokens, &u.OutputTokens, &u.CachedTokens)
		return u, err
	}, `SELECT u.model, sum(u.calls), sum(u.input_tokens), sum(u.output_tokens), sum(u.cached_tokens)
		FROM rm_model_llm_usage u JOIN rm_reward_models m ON m.id = u.model_id AND m.attempt = u.attempt
		WHERE u.model_id = $1 GROUP BY u.model ORDER BY u.model`, d.ID)
	if err != nil {
		return err
	}
	if !recorded {
		d.Feedback = json.RawMessage("null")
		return nil
	}
	out, err := pg.Append(ctx, q.pool, []FeedbackEntry{}, func(r pgx.CollectableRow) (FeedbackEntry, error) {
		var raw []byte
		var included, evaluation bool
		if err := r.Scan(&raw, &included, &evaluation); err != nil {
			return FeedbackEntry{}, err
		}
		var f events.Finding
		if err := json.Unmarshal(raw, &f); err != nil {
			return FeedbackEntry{}, err
		}
		e := FeedbackEntry{TraceID: f.TraceID, StepIndex: f.StepIndex, Label: f.Label, Confidence: f.Confidence, Source: f.Source,
			EvidenceID: f.EvidenceID, EvidenceQuote: f.EvidenceQuote, Reason: f.Reason, ClassifierModel: f.ClassifierModel,
			IncludedInTraining: included, IncludedInEvaluation: evaluation, ID: f.ID, StepID: f.StepID, Outcome: f.Outcome, PromptVersion: f.PromptVersion,
			Criteria: f.Criteria, OriginalAction: f.OriginalAction, AlternativeAction: f.AlternativeAction, Review: f.Review, Usage: f.Usage, Erased: f.Erased}
		if e.Criteria == nil {
			e.Criteria = []string{}
		}
		if f.ToolName != "" {
			e.ToolName = &f.ToolName
		}
		return e, nil
	}, `SELECT f.finding, f.included, f.evaluation FROM rm_model_findings f
		JOIN rm_reward_models m ON m.id = f.model_id AND m.attempt = f.attempt
		WHERE f.model_id = $1 ORDER BY f.seq, f.ord`, d.ID)
	if err != nil {
		return err
	}
	raw, err := json.Marshal(out)
	d.Feedback = raw
	return err
}

// ExtractingModels lists queued models whose extraction a worker claimed and
// has not finished (progress stage "extracting"): the lease sweep's nominees,
// whose streams decide whether the lease ran out.
func (q *Queries) ExtractingModels(ctx context.Context) ([]string, error) {
	return pg.Append(ctx, q.pool, nil, pgx.RowTo[string], `SELECT id FROM rm_reward_models WHERE status = 'queued' AND progress->>'stage' = 'extracting'`)
}
