package readmodel

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/criticml/critic/domain/events"
)

// teamAppliers project team review (issue 36): the account's review
// overlap, and adjudications (the latest per target replaces the earlier).
var teamAppliers = map[string]applier{
	events.UserReviewOverlapSet: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.UserReviewOverlapSetV1) error {
		return exec(ctx, tx, `UPDATE rm_users SET review_overlap = $2 WHERE id = $1`, p.UserID, p.Overlap)
	}),
	events.AnnotationAdjudicated: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.AnnotationAdjudicatedV1) error {
		step, crit := nilIfEmpty(p.StepID), nilIfEmpty(p.CriterionID)
		if err := exec(ctx, tx, `DELETE FROM rm_adjudications WHERE trace_id = $1 AND step_id IS NOT DISTINCT FROM $2::uuid
			AND criterion_id IS NOT DISTINCT FROM $3::uuid`, p.TraceID, step, crit); err != nil {
			return err
		}
		var rating any
		if p.CriterionID == "" {
			rating = p.Rating
		}
		return exec(ctx, tx, `INSERT INTO rm_adjudications (id, owner_id, trace_id, step_id, criterion_id, rating, value, reason, adjudicated_by,
			trace_revision, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT (id) DO NOTHING`,
			p.AdjudicationID, e.OwnerID, p.TraceID, step, crit, rating, jsonOrNil(p.Value), p.Reason, p.By, p.TraceRevision, e.RecordedAt)
	}),
}

// teamExtraAppliers run after another applier of the same event: a
// deleted trace takes its adjudications with it.
var teamExtraAppliers = map[string]applier{
	events.TraceDeleted: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.TraceDeletedV1) error {
		return exec(ctx, tx, `DELETE FROM rm_adjudications WHERE trace_id = $1`, p.TraceID)
	}),
}

// ReviewOverlap is how many members should judge each of the account's
// review queue items (agreement.DefaultOverlap until an admin sets it).
func (q *Queries) ReviewOverlap(ctx context.Context, owner string) (int, error) {
	var n int
	err := q.pool.QueryRow(ctx, `SELECT review_overlap FROM rm_users WHERE id = $1`, owner).Scan(&n)
	return n, err
}
