package readmodel

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/platform/pg"
)

// feedbackColumnAppliers add the learning report's columns to a reward
// model's row after modelAppliers wrote it (the table runs both).
var feedbackColumnAppliers = map[string]applier{
	events.RewardModelRequested: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.RewardModelRequestedV1) error {
		if rewardmodels.ConfigOf(p).AnnotationSource == events.SourceFeedback && p.FeedbackPlan != nil && p.FeedbackPlan.Unavailable != "" {
			return exec(ctx, tx, `UPDATE rm_reward_models SET feedback_unavailable = $2 WHERE id = $1`, p.ModelID, p.FeedbackPlan.Unavailable)
		}
		return nil
	}),
	events.RewardModelRetried: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.RewardModelRetriedV1) error {
		var unavailable *string
		if p.FeedbackPlan != nil && p.FeedbackPlan.Unavailable != "" {
			unavailable = &p.FeedbackPlan.Unavailable
		}
		if err := execAll(ctx, tx, []string{`DELETE FROM rm_model_findings WHERE model_id = $1`,
			`DELETE FROM rm_model_llm_usage WHERE model_id = $1`}, p.ModelID); err != nil {
			return err
		}
		return exec(ctx, tx, `UPDATE rm_reward_models SET feedback_recorded = false, feedback_unavailable = $2 WHERE id = $1`, p.ModelID, unavailable)
	}),
	events.RewardModelDatasetBuilt: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.RewardModelDatasetBuiltV1) error {
		if len(p.IncludedFindings) == 0 {
			return nil
		}
		if err := exec(ctx, tx, `UPDATE rm_model_findings SET included = true WHERE model_id = $1 AND attempt = $2 AND finding_id = ANY($3)`,
			p.ModelID, p.Attempt, p.IncludedFindings); err != nil {
			return err
		}
		if len(p.EvaluationFindings) == 0 {
			return nil
		}
		return exec(ctx, tx, `UPDATE rm_model_findings SET evaluation = true WHERE model_id = $1 AND attempt = $2 AND finding_id = ANY($3)`,
			p.ModelID, p.Attempt, p.EvaluationFindings)
	}),
	// A deleted trace's findings stay in the learning report, redacted:
	// what a replay reads of their events once the trace's key is gone
	// (events.TraceQuote), so replay equals the live table.
	events.TraceDeleted: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.TraceDeletedV1) error {
		type row struct {
			model, finding string
			attempt        int
			redacted       []byte
		}
		rs, err := pg.Append(ctx, tx, nil, func(rw pgx.CollectableRow) (r row, err error) {
			var raw []byte
			var f events.Finding
			if err := rw.Scan(&r.model, &r.attempt, &r.finding, &raw); err != nil {
				return r, err
			}
			if err := json.Unmarshal(raw, &f); err != nil {
				return r, err
			}
			r.redacted, err = json.Marshal(f.Redacted())
			return r, err
		}, `SELECT model_id::text, attempt, finding_id, finding FROM rm_model_findings WHERE trace_id = $1`, p.TraceID)
		if err != nil {
			return err
		}
		for _, r := range rs {
			if err := exec(ctx, tx, `UPDATE rm_model_findings SET finding = $4 WHERE model_id = $1 AND attempt = $2 AND finding_id = $3`,
				r.model, r.attempt, r.finding, r.redacted); err != nil {
				return err
			}
		}
		return nil
	}),
}

// extractionProgress is RewardModel.progress while a worker extracts.
type extractionProgress struct {
	Stage        string `json:"stage"`
	TargetsDone  int    `json:"targets_done"`
	TargetsTotal int    `json:"targets_total"`
}

// extractionAppliers project the extraction events.
var extractionAppliers = map[string]applier{
	events.RewardModelExtractionStarted: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.RewardModelExtractionStartedV1) error {
		prog, _ := json.Marshal(extractionProgress{Stage: "extracting", TargetsTotal: p.TargetsTotal})
		return exec(ctx, tx, `UPDATE rm_reward_models SET progress = $3 WHERE id = $1 AND attempt = $2`, p.ModelID, p.Attempt, prog)
	}),
	events.RewardModelExtractionProgressed: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.RewardModelExtractionProgressedV1) error {
		return exec(ctx, tx, `UPDATE rm_reward_models SET progress = jsonb_set(progress, '{targets_done}', to_jsonb($3::int))
			WHERE id = $1 AND attempt = $2 AND progress ? 'targets_total'`, p.ModelID, p.Attempt, p.TargetsDone)
	}),
	events.RewardModelFindingRecorded: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.RewardModelFindingRecordedV1) error {
		f := p.Finding
		if !f.Erased {
			// Recorded after its trace's deletion was projected (a worker
			// reporting while the trace was erased, before its key was
			// destroyed): the read model keeps it redacted, as a replay
			// reads it.
			var live bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM rm_traces WHERE id = $1)`, p.TraceID).Scan(&live); err != nil {
				return err
			}
			if !live {
				f = f.Redacted()
			}
		}
		raw, err := json.Marshal(f)
		if err != nil {
			return err
		}
		return exec(ctx, tx, `INSERT INTO rm_model_findings (model_id, attempt, finding_id, seq, ord, trace_id, finding)
			VALUES ($1, $2, $3, $4, 0, $5, $6) ON CONFLICT DO NOTHING`, p.ModelID, p.Attempt, p.Finding.ID, e.Seq, p.TraceID, raw)
	}),
	events.RewardModelFeedbackExtracted: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.RewardModelFeedbackExtractedV1) error {
		for i, f := range p.Findings { // records written with their findings inline
			raw, err := json.Marshal(f)
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO rm_model_findings (model_id, attempt, finding_id, seq, ord, trace_id, finding)
				VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING`, p.ModelID, p.Attempt, f.ID, e.Seq, i, p.TraceID, raw); err != nil {
				return err
			}
		}
		for _, u := range p.Usage {
			if _, err := tx.Exec(ctx, `INSERT INTO rm_model_llm_usage (model_id, attempt, seq, model, calls, input_tokens, output_tokens, cached_tokens)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING`, p.ModelID, p.Attempt, e.Seq, u.Model, u.Calls,
				u.InputTokens, u.OutputTokens, u.CachedTokens); err != nil {
				return err
			}
		}
		return exec(ctx, tx, `UPDATE rm_reward_models SET feedback_recorded = true WHERE id = $1 AND attempt = $2`, p.ModelID, p.Attempt)
	}),
	events.TraceTitled: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.TraceTitledV1) error {
		return exec(ctx, tx, `UPDATE rm_traces SET title = $2 WHERE id = $1 AND revision = $3`, p.TraceID, p.Title, p.Revision)
	}),
	events.RewardModelExtractionRequeued: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.RewardModelExtractionRequeuedV1) error {
		// Queued again with nobody extracting: no progress until a claim.
		return exec(ctx, tx, `UPDATE rm_reward_models SET progress = NULL WHERE id = $1 AND attempt = $2`, p.ModelID, p.Attempt)
	}),
	events.RewardModelExtractionFinished: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.RewardModelExtractionFinishedV1) error {
		// An extraction that failed before recording anything has no
		// report (null), not an empty one.
		return exec(ctx, tx, `UPDATE rm_reward_models SET feedback_recorded = feedback_recorded OR $3, progress = NULL WHERE id = $1 AND attempt = $2`,
			p.ModelID, p.Attempt, p.Error == "")
	}),
}
