package readmodel

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/platform/eventstore"
	"github.com/criticml/critic/platform/pg"
	"github.com/criticml/critic/projections"
)

// rebuildSchema holds the tables a replay builds while the live ones serve.
const rebuildSchema = "rm_rebuild"

// replayLockKey keeps two replays from building into the same schema.
const replayLockKey = 7_210_011

// Replay rebuilds the read model from every event in the log without
// blocking the running API: it builds fresh copies of the tables in the
// schema rm_rebuild while the live tables keep serving reads and the live
// projection keeps applying, then, in one short transaction that holds the
// projection's lock, applies what was appended meanwhile and swaps the new
// tables in for the old. Readers wait only for that swap.
//
// Events the live projection parked (and the owner's events after them)
// are held back exactly as the live projection holds them, so a replay
// equals the live read model; `critic projections retry` applies them to
// whichever tables are live. Events an operator skipped (`critic
// projections skip`) are left out, as the live projection leaves them out. An event that fails here and is not parked
// fails the replay, naming it, and leaves the live tables as they were.
func (p *Projection) Replay(ctx context.Context, store *eventstore.Store) (int, error) {
	conn, err := p.pool.Acquire(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Release()
	var locked bool
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", replayLockKey).Scan(&locked); err != nil {
		return 0, err
	}
	if !locked {
		return 0, errors.New("another `critic replay readmodel` is running against this database")
	}
	defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", replayLockKey) }()

	var live string
	if err := conn.QueryRow(ctx, `SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.oid = 'rm_traces'::regclass`).Scan(&live); err != nil {
		return 0, fmt.Errorf("find the read model's schema: %w", err)
	}
	held, err := parkedOwners(ctx, conn)
	if err != nil {
		return 0, err
	}
	skipped, err := projections.LoadSkipped(ctx, store)
	if err != nil {
		return 0, err
	}

	// Build: one transaction nobody else sees into.
	n := 0
	var after int64
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if err := createRebuildTables(ctx, tx, live); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "SET LOCAL search_path = "+pgx.Identifier{rebuildSchema}.Sanitize()+", "+pgx.Identifier{live}.Sanitize()); err != nil {
			return err
		}
		var err error
		n, err = p.replayAfter(ctx, tx, store, &after, held, skipped)
		return err
	})
	if err != nil {
		_, _ = conn.Exec(context.WithoutCancel(ctx), "DROP SCHEMA IF EXISTS "+rebuildSchema+" CASCADE")
		return 0, err
	}

	// Catch up outside the lock first, so the swap itself has little left.
	caught := 0
	if err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL search_path = "+pgx.Identifier{rebuildSchema}.Sanitize()+", "+pgx.Identifier{live}.Sanitize()); err != nil {
			return err
		}
		var err error
		caught, err = p.replayAfter(ctx, tx, store, &after, held, skipped)
		return err
	}); err != nil {
		_, _ = conn.Exec(context.WithoutCancel(ctx), "DROP SCHEMA IF EXISTS "+rebuildSchema+" CASCADE")
		return 0, err
	}

	// Swap: short, under the projection's lock. The live tables are locked
	// without waiting (NOWAIT) and the attempt starts over when a reader
	// holds one: a swap that waited while holding some tables could
	// deadlock with a reader holding others, and would queue every new
	// reader behind it.
	for attempt := 1; ; attempt++ {
		last, err := p.swap(ctx, conn, store, live, after, held)
		if err == nil {
			return n + caught + last, nil
		}
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "55P03" || attempt == 500 { // lock_not_available
			_, _ = conn.Exec(context.WithoutCancel(ctx), "DROP SCHEMA IF EXISTS "+rebuildSchema+" CASCADE")
			return 0, fmt.Errorf("swap in the rebuilt read model: %w", err)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(time.Duration(min(attempt, 20)) * 5 * time.Millisecond):
		}
	}
}

func (p *Projection) swap(ctx context.Context, conn interface {
	Begin(context.Context) (pgx.Tx, error)
}, store *eventstore.Store, live string, after int64, held map[string]int64) (int, error) {
	n := 0
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", applyLockKey); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "SET LOCAL search_path = "+pgx.Identifier{rebuildSchema}.Sanitize()+", "+pgx.Identifier{live}.Sanitize()); err != nil {
			return err
		}
		// An owner released by `projections retry` while the build ran had
		// its held events applied to the live tables: apply them here too.
		now, err := parkedOwners(ctx, tx)
		if err != nil {
			return err
		}
		skipped, err := projections.LoadSkipped(ctx, store) // skips appended meanwhile
		if err != nil {
			return err
		}
		for owner, seq := range held {
			if now[owner] == seq {
				continue
			}
			for from := seq - 1; ; {
				batch, err := store.ReadOwnerAfter(ctx, owner, from, 2000)
				if err != nil {
					return err
				}
				for len(batch) > 0 && batch[len(batch)-1].Seq > after {
					batch = batch[:len(batch)-1]
				}
				if len(batch) == 0 {
					break
				}
				if err := p.replayBatch(ctx, tx, batch, now, skipped); err != nil {
					return err
				}
				from = batch[len(batch)-1].Seq
			}
		}
		// What was appended while the build ran.
		if n, err = p.replayAfter(ctx, tx, store, &after, now, skipped); err != nil {
			return err
		}
		liveTables := make([]string, len(Tables))
		for i, t := range Tables {
			liveTables[i] = pgx.Identifier{live, t}.Sanitize()
		}
		if _, err := tx.Exec(ctx, "LOCK TABLE "+strings.Join(liveTables, ", ")+" IN ACCESS EXCLUSIVE MODE NOWAIT"); err != nil {
			return err
		}
		for _, t := range Tables {
			if _, err := tx.Exec(ctx, "DROP TABLE "+pgx.Identifier{live, t}.Sanitize()); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, "ALTER TABLE "+pgx.Identifier{rebuildSchema, t}.Sanitize()+" SET SCHEMA "+pgx.Identifier{live}.Sanitize()); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, "DROP SCHEMA "+rebuildSchema); err != nil {
			return err
		}
		return exec(ctx, tx, "SELECT pg_notify($1, '')", AppliedChannel)
	})
	return n, err
}

// replayAfter replays every event after *after (advancing it) and returns
// how many it read.
func (p *Projection) replayAfter(ctx context.Context, tx pgx.Tx, store *eventstore.Store, after *int64, held map[string]int64, skipped projections.Skipped) (int, error) {
	n := 0
	for {
		batch, err := store.ReadAfter(ctx, *after, 2000)
		if err != nil || len(batch) == 0 {
			return n, err
		}
		if err := p.replayBatch(ctx, tx, batch, held, skipped); err != nil {
			return n, err
		}
		n += len(batch)
		*after = batch[len(batch)-1].Seq
	}
}

// replayBatch applies a batch of the log into whatever tables the search
// path names, holding back the events the live projection holds.
func (p *Projection) replayBatch(ctx context.Context, tx pgx.Tx, batch []events.Envelope, held map[string]int64, skipped projections.Skipped) error {
	keep := skipped.Without(batch)
	if len(held) > 0 {
		keep = slices.DeleteFunc(slices.Clone(keep), func(e events.Envelope) bool {
			seq, ok := held[e.OwnerID]
			return ok && e.Seq >= seq
		})
	}
	fresh, err := claim(ctx, tx, keep)
	if err != nil {
		return err
	}
	return p.applyAll(ctx, tx, fresh)
}

// parkedOwners maps each owner the live projection holds to the position
// of its parked event.
func parkedOwners(ctx context.Context, q pg.Querier) (map[string]int64, error) {
	out := map[string]int64{}
	var owner string
	var seq int64
	err := pg.Each(ctx, q, []any{&owner, &seq}, func() error {
		out[owner] = seq
		return nil
	}, `SELECT owner_id::text, min(seq) FROM projection_parked WHERE projection = $1 GROUP BY owner_id`, Name)
	return out, err
}

var indexDefRe = regexp.MustCompile(`^(CREATE (?:UNIQUE )?INDEX) \S+ ON \S+ (.*)$`)

// createRebuildTables makes an empty copy of every live table (columns,
// defaults, constraints, indexes) in rm_rebuild, with the live indexes'
// names, so the swapped-in tables are indistinguishable from migrated ones.
func createRebuildTables(ctx context.Context, tx pgx.Tx, live string) error {
	if err := execAll(ctx, tx, []string{"DROP SCHEMA IF EXISTS " + rebuildSchema + " CASCADE", "CREATE SCHEMA " + rebuildSchema}); err != nil {
		return err
	}
	for _, t := range Tables {
		if _, err := tx.Exec(ctx, "CREATE TABLE "+pgx.Identifier{rebuildSchema, t}.Sanitize()+
			" (LIKE "+pgx.Identifier{live, t}.Sanitize()+" INCLUDING ALL)"); err != nil {
			return err
		}
		names := map[string]map[string]string{} // schema → shape → index name
		var schema, name, def string
		if err := pg.Each(ctx, tx, []any{&schema, &name, &def}, func() error {
			m := indexDefRe.FindStringSubmatch(def)
			if m == nil {
				return nil
			}
			if names[schema] == nil {
				names[schema] = map[string]string{}
			}
			names[schema][m[1]+" "+m[2]] = name
			return nil
		}, `SELECT schemaname, indexname, indexdef FROM pg_indexes WHERE tablename = $1 AND schemaname = ANY($2)`,
			t, []string{live, rebuildSchema}); err != nil {
			return err
		}
		for shape, want := range names[live] {
			got, ok := names[rebuildSchema][shape]
			if !ok || got == want {
				continue
			}
			if _, err := tx.Exec(ctx, "ALTER INDEX "+pgx.Identifier{rebuildSchema, got}.Sanitize()+" RENAME TO "+pgx.Identifier{want}.Sanitize()); err != nil {
				return err
			}
		}
	}
	return nil
}
