package readmodel

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/rewardmodels"
)

// applyFeedback adds the learning report's columns to reward-model events
// applyModel already projected.
func applyFeedback(ctx context.Context, tx pgx.Tx, e events.Envelope) error {
	switch e.Type {
	case events.RewardModelRequested:
		var p events.RewardModelRequestedV1
		if err := e.Decode(&p); err != nil {
			return err
		}
		if rewardmodels.ConfigOf(p).AnnotationSource == events.SourceFeedback && p.FeedbackPlan != nil && p.FeedbackPlan.Unavailable != "" {
			_, err := tx.Exec(ctx, `UPDATE rm_reward_models SET feedback_unavailable = $2 WHERE id = $1`, p.ModelID, p.FeedbackPlan.Unavailable)
			return err
		}
	case events.RewardModelRetried:
		var p events.RewardModelRetriedV1
		if err := e.Decode(&p); err != nil {
			return err
		}
		var unavailable *string
		if p.FeedbackPlan != nil && p.FeedbackPlan.Unavailable != "" {
			unavailable = &p.FeedbackPlan.Unavailable
		}
		if _, err := tx.Exec(ctx, `DELETE FROM rm_model_findings WHERE model_id = $1`, p.ModelID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM rm_model_llm_usage WHERE model_id = $1`, p.ModelID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE rm_reward_models SET feedback_recorded = false, feedback_unavailable = $2 WHERE id = $1`, p.ModelID, unavailable)
		return err
	case events.RewardModelDatasetBuilt:
		var p events.RewardModelDatasetBuiltV1
		if err := e.Decode(&p); err != nil {
			return err
		}
		if len(p.IncludedFindings) > 0 {
			_, err := tx.Exec(ctx, `UPDATE rm_model_findings SET included = true WHERE model_id = $1 AND attempt = $2 AND finding_id = ANY($3)`,
				p.ModelID, p.Attempt, p.IncludedFindings)
			return err
		}
	}
	return nil
}

// extractionProgress is RewardModel.progress while a worker extracts.
type extractionProgress struct {
	Stage        string `json:"stage"`
	TargetsDone  int    `json:"targets_done"`
	TargetsTotal int    `json:"targets_total"`
}

// applyFeedbackEvent projects the extraction events.
func applyFeedbackEvent(ctx context.Context, tx pgx.Tx, e events.Envelope) (bool, error) {
	exec := func(sql string, args ...any) (bool, error) {
		_, err := tx.Exec(ctx, sql, args...)
		return true, err
	}
	switch e.Type {
	case events.RewardModelExtractionStarted:
		var p events.RewardModelExtractionStartedV1
		if err := e.Decode(&p); err != nil {
			return true, err
		}
		prog, _ := json.Marshal(extractionProgress{Stage: "extracting", TargetsTotal: p.TargetsTotal})
		return exec(`UPDATE rm_reward_models SET progress = $3 WHERE id = $1 AND attempt = $2`, p.ModelID, p.Attempt, prog)
	case events.RewardModelExtractionProgressed:
		var p events.RewardModelExtractionProgressedV1
		if err := e.Decode(&p); err != nil {
			return true, err
		}
		return exec(`UPDATE rm_reward_models SET progress = jsonb_set(progress, '{targets_done}', to_jsonb($3::int))
			WHERE id = $1 AND attempt = $2 AND progress ? 'targets_total'`, p.ModelID, p.Attempt, p.TargetsDone)
	case events.RewardModelFindingRecorded:
		var p events.RewardModelFindingRecordedV1
		if err := e.Decode(&p); err != nil {
			return true, err
		}
		raw, err := json.Marshal(p.Finding)
		if err != nil {
			return true, err
		}
		return exec(`INSERT INTO rm_model_findings (model_id, attempt, finding_id, seq, ord, trace_id, finding)
			VALUES ($1, $2, $3, $4, 0, $5, $6) ON CONFLICT DO NOTHING`, p.ModelID, p.Attempt, p.Finding.ID, e.Seq, p.TraceID, raw)
	case events.RewardModelFeedbackExtracted:
		var p events.RewardModelFeedbackExtractedV1
		if err := e.Decode(&p); err != nil {
			return true, err
		}
		for i, f := range p.Findings { // records written with their findings inline
			raw, err := json.Marshal(f)
			if err != nil {
				return true, err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO rm_model_findings (model_id, attempt, finding_id, seq, ord, trace_id, finding)
				VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING`, p.ModelID, p.Attempt, f.ID, e.Seq, i, p.TraceID, raw); err != nil {
				return true, err
			}
		}
		for _, u := range p.Usage {
			if _, err := tx.Exec(ctx, `INSERT INTO rm_model_llm_usage (model_id, attempt, seq, model, calls, input_tokens, output_tokens, cached_tokens)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING`, p.ModelID, p.Attempt, e.Seq, u.Model, u.Calls,
				u.InputTokens, u.OutputTokens, u.CachedTokens); err != nil {
				return true, err
			}
		}
		return exec(`UPDATE rm_reward_models SET feedback_recorded = true WHERE id = $1 AND attempt = $2`, p.ModelID, p.Attempt)
	case events.TraceTitled:
		var p events.TraceTitledV1
		if err := e.Decode(&p); err != nil {
			return true, err
		}
		return exec(`UPDATE rm_traces SET title = $2 WHERE id = $1 AND revision = $3`, p.TraceID, p.Title, p.Revision)
	case events.RewardModelExtractionRequeued:
		var p events.RewardModelExtractionRequeuedV1
		if err := e.Decode(&p); err != nil {
			return true, err
		}
		// Queued again with nobody extracting: no progress until a claim.
		return exec(`UPDATE rm_reward_models SET progress = NULL WHERE id = $1 AND attempt = $2`, p.ModelID, p.Attempt)
	case events.RewardModelExtractionFinished:
		var p events.RewardModelExtractionFinishedV1
		if err := e.Decode(&p); err != nil {
			return true, err
		}
		// An extraction that failed before recording anything has no
		// report (null), not an empty one.
		return exec(`UPDATE rm_reward_models SET feedback_recorded = feedback_recorded OR $3, progress = NULL WHERE id = $1 AND attempt = $2`,
			p.ModelID, p.Attempt, p.Error == "")
	}
	return false, nil
}
