package readmodel

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/criticml/critic/domain/events"
)

// applier applies one event type to the read model inside the batch's
// transaction.
type applier func(ctx context.Context, w *writer, e events.Envelope) error

// appliers is the read model: each event type it projects and how. An
// event type missing here changes nothing in Postgres (the snapshot or a
// dispatcher may still use it).
var appliers = buildAppliers()

// buildAppliers joins the per-area tables; a type claimed twice is a
// programming error caught by every test that starts the package.
func buildAppliers() map[string]applier {
	all := map[string]applier{}
	for _, table := range []map[string]applier{coreAppliers, criteriaAppliers, modelAppliers, extractionAppliers,
		gepaAppliers, assessmentAppliers, labelAppliers, evaluatorRescoreAppliers, teamAppliers, retentionAppliers, accountErasureAppliers} {
		for typ, a := range table {
			if all[typ] != nil {
				panic("readmodel: two appliers for " + typ)
			}
			all[typ] = a
		}
	}
	for _, extras := range []map[string]applier{feedbackColumnAppliers, listColumnAppliers, teamExtraAppliers} {
		for typ, extra := range extras {
			all[typ] = then(all[typ], extra)
		}
	}
	return all
}

// then is first followed by extra in the same transaction (first may be
// nil: extra alone).
func then(first, extra applier) applier {
	if first == nil {
		return extra
	}
	return func(ctx context.Context, w *writer, e events.Envelope) error {
		if err := first(ctx, w, e); err != nil {
			return err
		}
		return extra(ctx, w, e)
	}
}

// on is the applier of payload type P: it decodes the payload (one that
// cannot be decoded parks the event, since retrying cannot help) and passes
// it to fn with the transaction.
func on[P any](fn func(ctx context.Context, tx pgx.Tx, e events.Envelope, p P) error) applier {
	return func(ctx context.Context, w *writer, e events.Envelope) error {
		var p P
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		return fn(ctx, w.tx, e, p)
	}
}

// exec runs one statement of an applier.
func exec(ctx context.Context, tx pgx.Tx, sql string, args ...any) error {
	_, err := tx.Exec(ctx, sql, args...)
	return err
}

// execAll runs statements in order, each with the same arguments, stopping
// at the first that fails.
func execAll(ctx context.Context, tx pgx.Tx, statements []string, args ...any) error {
	for _, sql := range statements {
		if err := exec(ctx, tx, sql, args...); err != nil {
			return err
		}
	}
	return nil
}
