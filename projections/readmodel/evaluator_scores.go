package readmodel

import (
	"context"
	"errors"

	"github.com/criticml/critic/platform/pg"
	"github.com/jackc/pgx/v5"
)

// evaluatorOf fills a trace's shared-evaluator block: the live release,
// the latest scores of the trace's current revision (by whichever release
// scored it last), and the outcome of its latest scoring job.
func (q *Queries) evaluatorOf(ctx context.Context, d *TraceDetail) error {
	ev := WaitingForEvaluator()
	var live int
	err := q.pool.QueryRow(ctx, `SELECT release FROM rm_evaluator_releases WHERE live`).Scan(&live)
	if errors.Is(err, pgx.ErrNoRows) {
		d.Evaluator = ev
		return nil
	}
	if err != nil {
		return err
	}
	ev.LiveRelease = &live
	var revision int
	if err := q.pool.QueryRow(ctx, `SELECT revision FROM rm_traces WHERE id = $1`, d.ID).Scan(&revision); err != nil {
		return err
	}
	ev.ActionScores, err = pg.Append(ctx, q.pool, ev.ActionScores, func(r pgx.CollectableRow) (sc EvaluatorActionScore, err error) {
		err = r.Scan(&sc.StepID, &sc.StepIndex, &sc.Score, &sc.Credit, &sc.Release, &sc.ScoredAt)
		sc.ScoredAt = sc.ScoredAt.UTC()
		return sc, err
	}, `SELECT e.step_id, s.idx, e.score, e.credit, e.release, e.scored_at FROM rm_evaluator_scores e
		JOIN rm_steps s ON s.trace_id = e.trace_id AND s.id = e.step_id
		WHERE e.trace_id = $1 AND e.trace_revision = $2 ORDER BY s.idx`, d.ID, revision)
	if err != nil {
		return err
	}
	ev.Status = EvaluatorScoring
	var rel, rev int
	var status string
	var msg *string
	err = q.pool.QueryRow(ctx, `SELECT release, trace_revision, status, error FROM rm_evaluator_scoring WHERE trace_id = $1`, d.ID).Scan(&rel, &rev, &status, &msg)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	if err == nil && rel == live && rev == revision {
		ev.Status = status
		if status == EvaluatorFailed {
			ev.Error = msg
		}
	}
	if len(ev.ActionScores) > 0 {
		ev.Release = new(ev.ActionScores[0].Release)
	}
	d.Evaluator = ev
	return nil
}
