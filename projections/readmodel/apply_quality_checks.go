package readmodel

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/stepscores"
	"github.com/criticml/critic/platform/pg"
)

// applyQualityChecks projects trace.steps_quality_checked: each check
// replaces the stored one of its chunk.
func applyQualityChecks(ctx context.Context, tx pgx.Tx, e events.Envelope) error {
	var p events.TraceStepsQualityCheckedV1
	if err := e.Decode(&p); err != nil {
		return err
	}
	for _, c := range p.Checks {
		b, err := json.Marshal(c.Probabilities)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO rm_step_quality_checks (trace_id, chunk_id, question, probabilities, revision, model, prompt_version, checked_at)
			SELECT $1, $2, $3, $4, $5, $6, $7, $8 WHERE EXISTS (SELECT 1 FROM rm_traces WHERE id = $1)
			ON CONFLICT (trace_id, chunk_id) DO UPDATE SET question = EXCLUDED.question, probabilities = EXCLUDED.probabilities,
				revision = EXCLUDED.revision, model = EXCLUDED.model, prompt_version = EXCLUDED.prompt_version, checked_at = EXCLUDED.checked_at`,
			p.TraceID, c.ChunkID, c.Question, b, p.Revision, p.Model, p.PromptVersion, e.RecordedAt); err != nil {
			return err
		}
	}
	return nil
}

// storedQualityChecks returns the grading model's answers for a trace by
// chunk id (empty when no grading model ever checked it), read through db
// (the pool, or an applier's transaction).
func storedQualityChecks(ctx context.Context, db pg.Querier, traceID string) (map[string]stepscores.Check, error) {
	out := map[string]stepscores.Check{}
	var c stepscores.Check
	var b []byte
	err := pg.Each(ctx, db, []any{&c.ChunkID, &c.Question, &b, &c.Model}, func() error {
		c.Probabilities = nil // Unmarshal would add to the previous row's map
		if err := json.Unmarshal(b, &c.Probabilities); err != nil {
			return err
		}
		out[c.ChunkID] = c
		return nil
	}, `SELECT chunk_id, question, probabilities, model FROM rm_step_quality_checks WHERE trace_id = $1`, traceID)
	return out, err
}
