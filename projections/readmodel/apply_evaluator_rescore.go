package readmodel

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/criticml/critic/domain/events"
)

// evaluatorRescoreAppliers project "Score again": the trace's evaluator
// status turns back to scoring for the revision and release asked, while
// the scores already recorded stay shown until the new ones replace them.
var evaluatorRescoreAppliers = map[string]applier{
	events.EvaluatorTraceRescoreRequested: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.EvaluatorTraceRescoreRequestedV1) error {
		return exec(ctx, tx, `INSERT INTO rm_evaluator_scoring (trace_id, owner_id, release, trace_revision, status, error, at)
			SELECT $1, $2, $3, $4, 'scoring', NULL, $5 WHERE EXISTS (SELECT 1 FROM rm_traces WHERE id = $1)
			ON CONFLICT (trace_id) DO UPDATE SET release = EXCLUDED.release, trace_revision = EXCLUDED.trace_revision,
				status = EXCLUDED.status, error = NULL, at = EXCLUDED.at`,
			p.TraceID, e.OwnerID, p.Release, p.TraceRevision, e.RecordedAt)
	}),
}
