package readmodel

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/platform/pg"
	"github.com/jackc/pgx/v5"
)

// ComparisonCandidate is a finding of one of the owner's reward models that
// proposed an alternative action and that reviewer has not compared yet.
type ComparisonCandidate struct {
	ModelID string
	Attempt int
	Finding events.Finding
}

// ComparisonCandidates lists up to limit candidates for reviewer, oldest
// finding first, one per finding id (a finding reused by a later attempt or
// model is one comparison). The caller checks each against the log.
func (q *Queries) ComparisonCandidates(ctx context.Context, owner, reviewer string, limit int) ([]ComparisonCandidate, error) {
	return pg.Append(ctx, q.pool, nil, func(r pgx.CollectableRow) (c ComparisonCandidate, err error) {
		var raw []byte
		if err := r.Scan(&c.ModelID, &c.Attempt, &raw); err != nil {
			return c, err
		}
		err = json.Unmarshal(raw, &c.Finding)
		return c, err
	}, `SELECT model_id, attempt, finding FROM (
			SELECT DISTINCT ON (f.finding_id) f.model_id::text AS model_id, f.attempt, f.finding, f.seq
			FROM rm_model_findings f
			JOIN rm_reward_models m ON m.id = f.model_id AND m.attempt = f.attempt
			JOIN rm_traces t ON t.id = f.trace_id AND t.owner_id = m.owner_id
			WHERE m.owner_id = $1 AND jsonb_typeof(f.finding->'alternative_action') = 'string'
				AND NOT EXISTS (SELECT 1 FROM rm_comparisons c WHERE c.reviewer_id = $2 AND c.finding_id = f.finding_id)
			ORDER BY f.finding_id, f.seq) x
		ORDER BY seq, model_id LIMIT $3`, owner, reviewer, limit)
}

// EvaluatorBenchmark is a frozen benchmark version's figures. SliceCounts
// names other accounts' tools, domains and agents: only operators see them
// (the CLI); the API shows how many slices there are.
type EvaluatorBenchmark struct {
	Version     int
	AsOfSeq     int64
	Items       int
	SliceCounts map[string]map[string]int
	FrozenAt    time.Time
}

// EvaluatorBenchmarks lists the frozen benchmark versions, newest first.
func (q *Queries) EvaluatorBenchmarks(ctx context.Context) ([]EvaluatorBenchmark, error) {
	return pg.Append(ctx, q.pool, []EvaluatorBenchmark{}, func(r pgx.CollectableRow) (b EvaluatorBenchmark, err error) {
		var raw []byte
		if err := r.Scan(&b.Version, &b.AsOfSeq, &b.Items, &raw, &b.FrozenAt); err != nil {
			return b, err
		}
		b.FrozenAt = b.FrozenAt.UTC()
		err = json.Unmarshal(raw, &b.SliceCounts)
		return b, err
	}, `SELECT version, as_of_seq, items, slice_counts, frozen_at FROM rm_evaluator_benchmarks ORDER BY version DESC`)
}

// MaxComparedModels bounds how many of an account's models the queue asks
// for preferred-action comparisons (the most recently scoring ones): each
// pair of them is compared on every shared context.
const MaxComparedModels = 20

// ScoringModels lists up to MaxComparedModels of the owner's reward models
// that scored actions, the most recently scoring first: the candidates of
// the queue's models comparisons (the log decides each one).
func (q *Queries) ScoringModels(ctx context.Context, owner string) ([]string, error) {
	return pg.Append(ctx, q.pool, nil, pgx.RowTo[string], `SELECT model_id::text FROM rm_action_scores WHERE owner_id = $1
		GROUP BY model_id ORDER BY max(created_at) DESC, model_id LIMIT $2`, owner, MaxComparedModels)
}

// EvaluatorRelease is a shared-evaluator release as the read model keeps
// it: its gate figures overall and per slice (slice names are other
// accounts' data: the API shows only counts), whether it is live, and
// when it was rolled back.
type EvaluatorRelease struct {
	Release          int
	CandidateID      string
	BenchmarkVersion int
	Replaces         int
	Overall          events.EvaluatorSliceFigures
	Slices           []events.EvaluatorSliceFigures
	Policy           events.EvaluatorPolicyV1
	Live             bool
	ReleasedAt       time.Time
	RolledBackAt     *time.Time
}

// EvaluatorReleases lists every release, newest first.
func (q *Queries) EvaluatorReleases(ctx context.Context) ([]EvaluatorRelease, error) {
	return pg.Append(ctx, q.pool, []EvaluatorRelease{}, func(row pgx.CollectableRow) (r EvaluatorRelease, err error) {
		var overall, slices, policy []byte
		if err := row.Scan(&r.Release, &r.CandidateID, &r.BenchmarkVersion, &r.Replaces, &overall, &slices, &policy, &r.Live, &r.ReleasedAt, &r.RolledBackAt); err != nil {
			return r, err
		}
		if err := errors.Join(json.Unmarshal(overall, &r.Overall), json.Unmarshal(slices, &r.Slices), json.Unmarshal(policy, &r.Policy)); err != nil {
			return r, err
		}
		r.ReleasedAt = r.ReleasedAt.UTC()
		if r.RolledBackAt != nil {
			r.RolledBackAt = new(r.RolledBackAt.UTC())
		}
		return r, nil
	}, `SELECT release, candidate_id, benchmark_version, replaces, overall, slices, policy, live, released_at, rolled_back_at
		FROM rm_evaluator_releases ORDER BY release DESC`)
}
