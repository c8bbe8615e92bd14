package readmodel

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/labels"
	"github.com/criticml/critic/platform/pg"
)

// labelAppliers project step labels and labeling state: each label
// replaces the stored one of its chunk.
var labelAppliers = map[string]applier{
	events.TraceLabelingFailed: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.TraceLabelingFailedV1) error {
		return exec(ctx, tx, `INSERT INTO rm_trace_labeling (trace_id, revision, model, failed, error, failed_at)
			SELECT $1, $2, $3, $4, $5, $6 WHERE EXISTS (SELECT 1 FROM rm_traces WHERE id = $1)
			ON CONFLICT (trace_id) DO UPDATE SET revision = EXCLUDED.revision, model = EXCLUDED.model, failed = EXCLUDED.failed,
				error = EXCLUDED.error, failed_at = EXCLUDED.failed_at`, p.TraceID, p.Revision, p.Model, p.Failed, p.Error, e.RecordedAt)
	}),
	events.TraceLabelingRequested: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.TraceLabelingRequestedV1) error {
		if p.Relabel { // a rescore: every recorded label awaits a new one (traces.State.Stale)
			if err := exec(ctx, tx, `UPDATE rm_step_labels SET stale = true WHERE trace_id = $1`, p.TraceID); err != nil {
				return err
			}
		}
		return exec(ctx, tx, `DELETE FROM rm_trace_labeling WHERE trace_id = $1`, p.TraceID)
	}),
	events.TraceStepsQualityChecked: func(ctx context.Context, w *writer, e events.Envelope) error {
		return applyQualityChecks(ctx, w.tx, e)
	},
	events.TraceStepsLabeled: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.TraceStepsLabeledV1) error {
		for _, l := range p.Labels {
			b, err := json.Marshal(l)
			if err != nil {
				return err
			}
			if err := exec(ctx, tx, `INSERT INTO rm_step_labels (trace_id, chunk_id, label, revision, model, prompt_version, labeled_at)
				SELECT $1, $2, $3, $4, $5, $6, $7 WHERE EXISTS (SELECT 1 FROM rm_traces WHERE id = $1)
				ON CONFLICT (trace_id, chunk_id) DO UPDATE SET label = EXCLUDED.label, revision = EXCLUDED.revision,
					model = EXCLUDED.model, prompt_version = EXCLUDED.prompt_version, labeled_at = EXCLUDED.labeled_at, stale = false`,
				p.TraceID, l.ChunkID, b, p.Revision, p.Model, p.PromptVersion, e.RecordedAt); err != nil {
				return err
			}
		}
		return nil
	}),
}

// storedLabels returns the model-made labels of a trace by chunk id, read
// through db (the pool, or an applier's transaction).
func storedLabels(ctx context.Context, db pg.Querier, traceID string) (map[string]labels.Label, error) {
	out := map[string]labels.Label{}
	var b []byte
	err := pg.Each(ctx, db, []any{&b}, func() error {
		var l labels.Label
		if err := json.Unmarshal(b, &l); err != nil {
			return err
		}
		out[l.ChunkID] = l
		return nil
	}, `SELECT label FROM rm_step_labels WHERE trace_id = $1`, traceID)
	return out, err
}

// staleLabels returns the chunk ids whose model-made label a rescore asked
// to replace and that have no new one yet.
func (q *Queries) staleLabels(ctx context.Context, traceID string) (map[string]bool, error) {
	out := map[string]bool{}
	var id string
	err := pg.Each(ctx, q.pool, []any{&id}, func() error {
		out[id] = true
		return nil
	}, `SELECT chunk_id FROM rm_step_labels WHERE trace_id = $1 AND stale`, traceID)
	return out, err
}

// labelingFailure is the failure of the trace's current revision, if any:
// its reason, naming the model and what went wrong.
func (q *Queries) labelingFailure(ctx context.Context, traceID string) (*string, error) {
	var msg string
	err := q.pool.QueryRow(ctx, `SELECT l.error FROM rm_trace_labeling l JOIN rm_traces t ON t.id = l.trace_id AND t.revision = l.revision
		WHERE l.trace_id = $1`, traceID).Scan(&msg)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &msg, nil
}
