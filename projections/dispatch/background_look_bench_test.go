package dispatch_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/platform/pg/pgtest"
	"github.com/criticml/critic/projections/readmodel"
)

// BenchmarkBackgroundLook is what one look at a model's candidates costs in
// an account of 100,000 traces the model has scored and 16 new ones (`make
// bench-score`): from the cursor a look starts at (the debounce's edge less
// a minute, once everything before is settled) against from the first
// trace, as every look did before the cursor — taking turns, median of 20
// each. Background scoring looks at every ready model each tick (3 s) and
// at each batch's end.
func BenchmarkBackgroundLook(b *testing.B) {
	const scored, fresh, looks = 100000, 16, 20
	ctx := context.Background()
	pool := pgtest.NewPool(b)
	owner, model := uuid.NewString(), uuid.NewString()
	now := time.Now()
	insert := func(n int, at time.Time) {
		_, err := pool.Exec(ctx, `INSERT INTO rm_traces (id, owner_id, title, source_format, source_id, revision, step_count, created_at, updated_at, import_seq)
			SELECT gen_random_uuid(), $1, 't', 'stash', 's', 1, 2, $3::timestamptz, $3::timestamptz + g * interval '1 ms', g FROM generate_series(1, $2) g`, owner, n, at)
		require.NoError(b, err)
	}
	insert(scored, now.Add(-24*time.Hour))
	_, err := pool.Exec(ctx, `INSERT INTO rm_trace_scores (trace_id, model_id, owner_id, model_name, revision, score, created_at)
		SELECT id, $1, owner_id, 'm', 1, 0.5, now() FROM rm_traces`, model)
	require.NoError(b, err)
	insert(fresh, now.Add(-40*time.Second))
	_, err = pool.Exec(ctx, `INSERT INTO rm_steps (id, trace_id, owner_id, idx, role, content)
		SELECT gen_random_uuid(), t.id, t.owner_id, i, CASE WHEN i = 0 THEN 'user' ELSE 'assistant' END, 'hello there'
		FROM rm_traces t CROSS JOIN generate_series(0, 1) i`)
	require.NoError(b, err)
	_, err = pool.Exec(ctx, `ANALYZE`)
	require.NoError(b, err)

	q := readmodel.NewQueries(pool)
	changedBefore := now.Add(-30 * time.Second)
	cursor := readmodel.BackgroundCursor{UpdatedAt: changedBefore.Add(-time.Minute)}
	look := func(from readmodel.BackgroundCursor) ([]string, time.Duration) {
		t0 := time.Now()
		ids, _, err := q.BackgroundCandidates(ctx, owner, model, changedBefore, from, nil, 16)
		require.NoError(b, err)
		return ids, time.Since(t0)
	}
	for range b.N {
		var full, fromCursor []time.Duration
		for range looks {
			all, d := look(readmodel.BackgroundCursor{})
			full = append(full, d)
			ids, d := look(cursor)
			fromCursor = append(fromCursor, d)
			require.Len(b, ids, fresh)
			require.Equal(b, all, ids, "both looks nominate the new traces")
		}
		slices.Sort(full)
		slices.Sort(fromCursor)
		f, c := full[looks/2], fromCursor[looks/2]
		fmt.Printf("background look: %d scored traces and %d new: from the cursor %v, from the first trace %v (median of %d): ratio %.3f\n",
			scored, fresh, c, f, looks, float64(c)/float64(f))
		b.ReportMetric(float64(c)/float64(f), "cursor/full")
	}
}
