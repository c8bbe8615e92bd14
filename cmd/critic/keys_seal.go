package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/criticml/critic/platform/relay"
)

// sealExisting seals the events stored in clear before encryption was on
// (docs/operations.md, "Events stored before encryption"). It rewrites the
// log, so it refuses to run beside an API instance: it takes the relay's
// leader lock, which every running instance's relay holds or waits on, and
// keeps it until it is done, so no relay publishes half-rewritten rows.
func sealExisting(ctx context.Context, in *infra) error {
	store := in.store
	if store.Keyring() == nil {
		return errors.New("critic keys seal-existing: CRITIC_ENCRYPTION=off, there is no key to seal with: turn encryption on (unset CRITIC_ENCRYPTION) and run again")
	}
	conn, err := in.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	var got bool
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", relay.LeaderLockKey).Scan(&got); err != nil {
		return err
	}
	if !got {
		return errors.New("critic keys seal-existing: an API instance is running (it holds the relay's lock on this database): stop every API instance (critic serve/run) first, then run it again")
	}
	defer func() { _, _ = conn.Exec(context.Background(), "SELECT pg_advisory_unlock($1)", relay.LeaderLockKey) }()
	n, err := store.SealExisting(ctx, 500, func(done, total int) {
		fmt.Printf("sealed %d of %d events\n", done, total)
	})
	if err != nil {
		return fmt.Errorf("critic keys seal-existing: %w (the %d events sealed before it stay sealed; run it again to seal the rest)", err, n)
	}
	fmt.Printf("sealed %d events stored in clear. Old Kafka segments and database backups still hold them in clear: see docs/operations.md\n", n)
	return nil
}
