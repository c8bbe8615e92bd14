package instance_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/platform/instance"
	"github.com/criticml/critic/platform/pg/pgtest"
)

// A generated id is kept in its data directory: the same directory gives
// the same id after a restart, another directory (a second instance on the
// same host) another one.
func TestGeneratedIDIsKeptPerDataDirectory(t *testing.T) {
	t.Parallel()
	a, b := t.TempDir(), t.TempDir()
	idA, err := instance.LoadOrCreateID(a)
	require.NoError(t, err)
	require.NoError(t, instance.Validate(idA))
	again, err := instance.LoadOrCreateID(a)
	require.NoError(t, err)
	require.Equal(t, idA, again)
	idB, err := instance.LoadOrCreateID(b)
	require.NoError(t, err)
	require.NotEqual(t, idA, idB)
	raw, err := os.ReadFile(filepath.Join(a, instance.IDFile))
	require.NoError(t, err)
	require.Equal(t, idA+"\n", string(raw))

	require.Error(t, instance.Validate("bad id/with slash"))
}

// A second claim of a live id is refused naming the holder; once the holder
// releases it — or its connection dies, as with kill -9 — the id is free.
func TestSecondLiveInstanceIsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	first, err := instance.Acquire(ctx, pool, "api-1", instance.Options{Host: "host-a", PID: 41, Addr: "10.0.0.1:8080"})
	require.NoError(t, err)

	_, err = instance.Acquire(ctx, pool, "api-1", instance.Options{Host: "host-b", PID: 42, Wait: 300 * time.Millisecond})
	var inUse *instance.InUseError
	require.True(t, errors.As(err, &inUse), "%v", err)
	require.Equal(t, "host-a", inUse.Host)
	require.Equal(t, 41, inUse.PID)
	require.Contains(t, err.Error(), `instance id "api-1" is in use by the instance on host host-a (pid 41, 10.0.0.1:8080`)
	require.Contains(t, err.Error(), "CRITIC_INSTANCE_ID")

	other, err := instance.Acquire(ctx, pool, "api-2", instance.Options{Host: "host-b", PID: 42})
	require.NoError(t, err, "another id is independent")
	require.NoError(t, other.Release())

	require.NoError(t, first.Release())
	second, err := instance.Acquire(ctx, pool, "api-1", instance.Options{Host: "host-b", PID: 42})
	require.NoError(t, err)

	// The holder's backend ends (what kill -9 of the holder causes): the id
	// is free for the restarted instance without any lease to expire.
	_, err = pool.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND granted
		AND pid <> pg_backend_pid() AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`)
	require.NoError(t, err)
	require.Error(t, second.Alive(ctx), "the claim's connection is gone")
	third, err := instance.Acquire(ctx, pool, "api-1", instance.Options{Host: "host-c", PID: 43})
	require.NoError(t, err)
	require.NoError(t, third.Release())
}
