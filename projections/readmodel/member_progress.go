package readmodel

import (
	"context"
	"time"

	"github.com/criticml/critic/domain/members"
	"github.com/criticml/critic/platform/pg"
	"github.com/jackc/pgx/v5"
)

// MemberProgress is one member's share of the review (issue 36): what the
// admin's "who did what" shows.
type MemberProgress struct {
	Member
	// Annotations counts every live annotation the member made (ratings,
	// comments, criterion values, label-error flags).
	Annotations int `json:"annotations"`
	// Judged counts the traces the member judged as a whole: the queue's
	// items (wholeTraceJudges) that name them as a judge.
	Judged int `json:"judged"`
	// Remaining counts the traces the review queue would still offer the
	// member under the overlap (needsJudgment); nil for a member who may
	// not annotate (a viewer) or was removed: nothing is theirs to do.
	Remaining *int `json:"remaining"`
	// LastActivity is when the member last annotated (nil: never).
	LastActivity *time.Time `json:"last_activity_at"`
}

// QueueCoverage is the review queue as a whole under the overlap: how many
// traces there are and how many overlap members have judged.
type QueueCoverage struct {
	Items    int `json:"items"`
	Complete int `json:"complete"`
}

// MembersProgress lists every member of an owner (as Members orders them)
// with their progress under overlap, and the queue's coverage. Judged and
// Remaining follow the no-model queue's rule (LeastAnnotatedTraces): a
// trace needs a member while they have not judged it and fewer than
// overlap members have.
func (q *Queries) MembersProgress(ctx context.Context, owner string, overlap int) ([]MemberProgress, QueueCoverage, error) {
	var cov QueueCoverage
	if err := q.pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE (SELECT count(DISTINCT a.author_id) `+wholeTraceJudges+`) >= $2)
		FROM rm_traces t WHERE t.owner_id = $1`, owner, overlap).Scan(&cov.Items, &cov.Complete); err != nil {
		return nil, cov, err
	}
	out, err := pg.Append(ctx, q.pool, []MemberProgress{}, func(r pgx.CollectableRow) (p MemberProgress, err error) {
		var role string
		var remaining int
		if err := r.Scan(&p.ID, &p.Name, &role, &p.CreatedAt, &p.Removed, &p.Annotations, &p.Judged, &remaining, &p.LastActivity); err != nil {
			return p, err
		}
		p.Role, p.CreatedAt = members.Role(role), p.CreatedAt.UTC()
		if p.LastActivity != nil {
			p.LastActivity = new(p.LastActivity.UTC())
		}
		if !p.Removed && p.Role.May(members.Annotate) {
			p.Remaining = &remaining
		}
		return p, nil
	}, `SELECT m.member_id::text, m.name, m.role, m.created_at, m.removed,
		(SELECT count(*) FROM rm_annotations a WHERE a.owner_id = $1 AND a.author_id = m.member_id),
		(SELECT count(*) FROM rm_traces t WHERE t.owner_id = $1 AND EXISTS (SELECT 1 `+wholeTraceJudges+` AND a.author_id = m.member_id)),
		(SELECT count(*) FROM rm_traces t WHERE t.owner_id = $1
			AND NOT EXISTS (SELECT 1 `+wholeTraceJudges+` AND a.author_id = m.member_id)
			AND (SELECT count(DISTINCT a.author_id) `+wholeTraceJudges+`) < $2),
		(SELECT max(a.created_at) FROM rm_annotations a WHERE a.owner_id = $1 AND a.author_id = m.member_id)
		FROM rm_members m WHERE m.owner_id = $1 ORDER BY m.created_at, m.member_id`, owner, overlap)
	return out, cov, err
}
