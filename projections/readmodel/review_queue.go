package readmodel

import (
	"context"
	"fmt"

	"github.com/criticml/critic/platform/pg"
	"github.com/jackc/pgx/v5"
)

// ReviewCandidate is a trace or one of its actions the review queue may
// offer: what a reviewer needs to open it, and the model's number for it.
type ReviewCandidate struct {
	TraceID    string
	TraceTitle string
	StepID     *string
	StepIndex  *int
	// Score is the model's raw reward (nil without a model).
	Score *float64
	// Credit is the action's credit (actions only).
	Credit *float64
	// Annotations counts the trace's annotations (the no-model ranking).
	Annotations int
}

// Assignment with overlap (package agreement), stated here only: a whole trace
// (wholeTraceJudges) or an action (actionJudges) is offered to member $M
// while fewer than $O members judged it — a live rating not flagged as a
// label error — and $M is not one of them. A member is an annotation's
// author_id. With overlap 1 and one member this is "nobody rated it".
const (
	wholeTraceJudges = `FROM rm_annotations a WHERE a.trace_id = t.id AND a.step_id IS NULL AND a.rating IS NOT NULL AND NOT a.label_error`
	actionJudges     = `FROM rm_annotations a WHERE a.step_id = s.step_id AND a.rating IS NOT NULL AND NOT a.label_error`
)

// needsJudgment is the SQL condition of the rule over judges (one of the
// constants above), the member and overlap being parameters $m and $o.
func needsJudgment(judges string, m, o int) string {
	return fmt.Sprintf(`NOT EXISTS (SELECT 1 %s AND a.author_id = $%d) AND (SELECT count(DISTINCT a.author_id) %s) < $%d`, judges, m, judges, o)
}

// UncertainTraces lists an owner's traces scored by model at their current
// revision that still need member's judgment as a whole (needsJudgment),
// nearest the given mean first: the whole traces the model is least sure
// of. A stale score (of an older revision) is not offered.
func (q *Queries) UncertainTraces(ctx context.Context, owner, member string, overlap int, model string, mean float64, limit int) ([]ReviewCandidate, error) {
	return pg.Append(ctx, q.pool, []ReviewCandidate{}, func(r pgx.CollectableRow) (c ReviewCandidate, err error) {
		var s float64
		err = r.Scan(&c.TraceID, &c.TraceTitle, &s)
		c.Score = &s
		return c, err
	}, `SELECT t.id, t.title, s.score FROM rm_trace_scores s JOIN rm_traces t ON t.id = s.trace_id AND t.revision = s.revision
		WHERE s.model_id = $1 AND s.owner_id = $2 AND t.owner_id = $2
		  AND `+needsJudgment(wholeTraceJudges, 5, 6)+`
		ORDER BY abs(s.score - $3), t.import_seq DESC, t.id LIMIT $4`, model, owner, mean, limit, member, overlap)
}

// UncertainActions lists the actions of an owner's traces that model
// scored at the trace's current revision and that still need member's
// judgment (needsJudgment), credit nearest zero first. Thinking
// (metadata.thinking) is the model's reasoning before a reply, not an
// action: it is never offered.
func (q *Queries) UncertainActions(ctx context.Context, owner, member string, overlap int, model string, limit int) ([]ReviewCandidate, error) {
	return pg.Append(ctx, q.pool, []ReviewCandidate{}, func(r pgx.CollectableRow) (c ReviewCandidate, err error) {
		var step string
		var idx int
		var s, cr float64
		err = r.Scan(&c.TraceID, &c.TraceTitle, &step, &idx, &s, &cr)
		c.StepID, c.StepIndex, c.Score, c.Credit = &step, &idx, &s, &cr
		return c, err
	}, `SELECT t.id, t.title, s.step_id::text, st.idx, s.score, s.credit
		FROM rm_action_scores s JOIN rm_traces t ON t.id = s.trace_id AND t.revision = s.revision JOIN rm_steps st ON st.id = s.step_id
		WHERE s.model_id = $1 AND s.owner_id = $2 AND t.owner_id = $2
		  AND `+needsJudgment(actionJudges, 4, 5)+`
		  AND (st.metadata->'thinking') IS DISTINCT FROM 'true'::jsonb
		ORDER BY abs(s.credit), t.import_seq DESC, st.idx LIMIT $3`, model, owner, limit, member, overlap)
}

// LeastAnnotatedTraces lists an owner's traces with the fewest
// annotations first (flagged ones still count: someone looked), newest
// first among equals: the queue without a model. A trace judged as a whole
// by member or by overlap members (needsJudgment) leaves it: the queue is
// a to-do list, not a sort order.
func (q *Queries) LeastAnnotatedTraces(ctx context.Context, owner, member string, overlap, limit int) ([]ReviewCandidate, error) {
	return pg.Append(ctx, q.pool, []ReviewCandidate{}, func(r pgx.CollectableRow) (c ReviewCandidate, err error) {
		err = r.Scan(&c.TraceID, &c.TraceTitle, &c.Annotations)
		return c, err
	}, `SELECT t.id, t.title, (SELECT count(*) FROM rm_annotations a WHERE a.trace_id = t.id) AS n
		FROM rm_traces t WHERE t.owner_id = $1
		  AND `+needsJudgment(wholeTraceJudges, 3, 4)+`
		ORDER BY n, t.import_seq DESC, t.id LIMIT $2`, owner, limit, member, overlap)
}
