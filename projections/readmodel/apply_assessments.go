package readmodel

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/platform/pg"
)

// assessmentAppliers project the assessment events into rm_assessments. A
// request marks its keys pending (a key already answered stays answered);
// an answer or a failure replaces the key's state.
var assessmentAppliers = map[string]applier{
	events.TraceAssessmentRequested: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.TraceAssessmentRequestedV1) error {
		for _, it := range p.Items {
			if _, err := tx.Exec(ctx, `INSERT INTO rm_assessments (trace_id, kind, key, version, state, requested_at, lease_seconds, updated_at)
				SELECT $1, $2, $3, $4, 'pending', $5, $6, $5 WHERE EXISTS (SELECT 1 FROM rm_traces WHERE id = $1)
				ON CONFLICT (trace_id, kind, key) DO UPDATE SET state = 'pending', requested_at = EXCLUDED.requested_at,
					lease_seconds = EXCLUDED.lease_seconds, error = NULL, updated_at = EXCLUDED.updated_at
				WHERE rm_assessments.state <> 'done'`, p.TraceID, p.Kind, it.Key, p.Version, e.RecordedAt, p.LeaseSeconds); err != nil {
				return err
			}
		}
		return nil
	}),
	events.TraceAssessmentRecorded: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.TraceAssessmentRecordedV1) error {
		var result any = p.Tasks
		if p.Kind == events.AssessmentSections {
			result = p.Section
		}
		b, err := json.Marshal(result)
		if err != nil {
			return err
		}
		return upsertAssessment(ctx, tx, p.TraceID, p.Kind, p.Key, p.Version, "done", b, nil, p.Model, e.RecordedAt)
	}),
	events.TraceAssessmentFailed: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.TraceAssessmentFailedV1) error {
		return upsertAssessment(ctx, tx, p.TraceID, p.Kind, p.Key, p.Version, "failed", nil, &p.Error, p.Model, e.RecordedAt)
	}),
}

func upsertAssessment(ctx context.Context, tx pgx.Tx, traceID, kind, key, version, state string, result []byte, msg *string, model string, at time.Time) error {
	return exec(ctx, tx, `INSERT INTO rm_assessments (trace_id, kind, key, version, state, result, error, model, updated_at)
		SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9 WHERE EXISTS (SELECT 1 FROM rm_traces WHERE id = $1)
		ON CONFLICT (trace_id, kind, key) DO UPDATE SET version = EXCLUDED.version, state = EXCLUDED.state, result = EXCLUDED.result,
			error = EXCLUDED.error, model = EXCLUDED.model, updated_at = EXCLUDED.updated_at`,
		traceID, kind, key, version, state, result, msg, model, at)
}

// Assessment is one cached assessment: State is "pending", "done" or
// "failed"; Leased is true while a pending or failed key's lease runs (by
// the database's clock), so nobody asks for it again until it expires.
type Assessment struct {
	State  string
	Result json.RawMessage
	Error  string
	Leased bool
}

// FailedRetryAfterSeconds is how long a failed assessment answers
// "unavailable" before the next request asks a model again.
const FailedRetryAfterSeconds = 60

// Assessments returns the cached assessments of a trace's keys.
func (q *Queries) Assessments(ctx context.Context, traceID, kind string, keys []string) (map[string]Assessment, error) {
	out := map[string]Assessment{}
	var k string
	var a Assessment
	var res []byte
	err := pg.Each(ctx, q.pool, []any{&k, &a.State, &res, &a.Error, &a.Leased}, func() error {
		a.Result = res
		out[k] = a
		return nil
	}, `SELECT key, state, result, coalesce(error, ''),
			CASE WHEN state = 'pending' THEN requested_at + make_interval(secs => lease_seconds)
				ELSE updated_at + make_interval(secs => $4) END > now()
		FROM rm_assessments WHERE trace_id = $1 AND kind = $2 AND key = ANY($3)`, traceID, kind, keys, FailedRetryAfterSeconds)
	return out, err
}
