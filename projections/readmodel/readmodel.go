// Package readmodel is the Postgres read model the API queries: users, keys,
// traces, steps and spans. It is disposable: Replay rebuilds it from the log.
package readmodel

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/platform/eventstore"
	"github.com/criticml/critic/platform/keyring"
	"github.com/criticml/critic/platform/pg"
)

// Name is the projection's consumer group and dedupe key.
const Name = "readmodel"

// AppliedChannel is notified after every committed batch; waiters for
// read-your-writes listen on it.
const AppliedChannel = "critic_readmodel_applied"

const applyLockKey = 7_210_010

// Tables lists the read-model tables, in an order safe to truncate and compare.
var Tables = []string{"rm_users", "rm_members", "rm_api_keys", "rm_traces", "rm_steps", "rm_spans", "rm_annotations", "rm_adjudications", "rm_trace_sources", "rm_criteria", "rm_guidelines",
	"rm_reward_models", "rm_trace_scores", "rm_action_scores", "rm_scoring_runs", "rm_gepa_runs", "rm_step_labels", "rm_step_quality_checks", "rm_trace_labeling", "rm_assessments", "rm_model_findings", "rm_model_llm_usage", "rm_comparisons", "rm_evaluator_benchmarks", "rm_evaluator_releases", "rm_evaluator_scores", "rm_evaluator_scoring", "readmodel_applied"}

// Projection applies events to the read-model tables.
type Projection struct {
	pool  *pgxpool.Pool
	blobs blob.Store
	keys  *keyring.Ring
	log   *slog.Logger
}

// New returns the projection.
func New(pool *pgxpool.Pool, blobs blob.Store, log *slog.Logger) *Projection {
	return &Projection{pool: pool, blobs: blobs, log: log}
}

// WithKeyring opens sealed payloads with keys (the event store's keyring;
// nil when the deployment stores payloads in clear).
func (p *Projection) WithKeyring(keys *keyring.Ring) *Projection {
	p.keys = keys
	return p
}

// Apply applies a batch in one transaction, skipping events already applied.
func (p *Projection) Apply(ctx context.Context, envs []events.Envelope) error {
	if len(envs) == 0 {
		return nil
	}
	return pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		// The commit stays synchronous although the read model is
		// rebuildable (no SET LOCAL synchronous_commit = off): the bus
		// commits a batch's offsets as soon as Apply returns, so a commit
		// lost in a Postgres crash (up to 3 × wal_writer_delay of them)
		// would leave its events out of the read model for good, with
		// nothing redelivering them and nothing noticing the gap short of a
		// manual `critic replay`. The saving, one WAL flush per batch of up
		// to a few thousand events, does not pay for that.
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", applyLockKey); err != nil {
			return err
		}
		fresh, err := claim(ctx, tx, envs)
		if err != nil {
			return err
		}
		if err := p.applyAll(ctx, tx, fresh); err != nil {
			return err
		}
		return exec(ctx, tx, "SELECT pg_notify($1, '')", AppliedChannel)
	})
}

// claim records the batch's event ids and returns the envelopes not seen
// before, in batch order.
func claim(ctx context.Context, tx pgx.Tx, envs []events.Envelope) ([]events.Envelope, error) {
	ids := make([]string, len(envs))
	seqs := make([]int64, len(envs))
	for i, e := range envs {
		ids[i], seqs[i] = e.ID, e.Seq
	}
	isNew := map[string]bool{}
	var id string
	if err := pg.Each(ctx, tx, []any{&id}, func() error {
		isNew[id] = true
		return nil
	}, `INSERT INTO readmodel_applied (event_id, seq)
		SELECT * FROM unnest($1::uuid[], $2::bigint[]) ON CONFLICT DO NOTHING RETURNING event_id::text`, ids, seqs); err != nil {
		return nil, err
	}
	out := envs[:0:0]
	for _, e := range envs {
		if isNew[e.ID] {
			out = append(out, e)
			delete(isNew, e.ID) // the same id twice in one batch applies once
		}
	}
	return out, nil
}

func (p *Projection) applyAll(ctx context.Context, tx pgx.Tx, envs []events.Envelope) error {
	w := &writer{tx: tx}
	for _, e := range envs {
		e, err := eventstore.Resolve(ctx, p.blobs, p.keys, e)
		if eventstore.IsErased(err) {
			continue // an erased event projects nothing
		}
		if err != nil {
			return err
		}
		if err := w.apply(ctx, e); err != nil {
			return fmt.Errorf("readmodel: apply %s %s: %w", e.Type, e.ID, err)
		}
	}
	return w.flush(ctx)
}

// jsonOrNil encodes v for a jsonb column, keeping SQL NULL for empty values.
func jsonOrNil(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			return nil
		}
	case json.RawMessage:
		if len(x) == 0 || string(x) == "null" {
			return nil
		}
		return string(x)
	case nil:
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return string(b)
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
