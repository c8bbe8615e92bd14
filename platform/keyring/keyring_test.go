package keyring_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/platform/keyring"
	"github.com/criticml/critic/platform/pg/pgtest"
)

func randomKey() []byte {
	k := make([]byte, keyring.KeySize)
	_, _ = rand.Read(k)
	return k
}

// Rotation re-wraps every live key: what was sealed before opens with the
// new master key only, and a destroyed key stays destroyed.
func TestRotateRewrapsDataKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	oldKey, newKey := randomKey(), randomKey()
	ring, err := keyring.New(pool, oldKey)
	require.NoError(t, err)
	nonce, ct, err := ring.Seal(ctx, "trace/a", []byte("secret"), []byte("aad"))
	require.NoError(t, err)
	_, _, err = ring.Seal(ctx, "trace/b", []byte("other"), nil)
	require.NoError(t, err)
	require.NoError(t, ring.Destroy(ctx, "trace/b"))

	n, err := ring.Rotate(ctx, newKey)
	require.NoError(t, err)
	require.Equal(t, 1, n)

	rotated, err := keyring.New(pool, newKey)
	require.NoError(t, err)
	plain, err := rotated.Open(ctx, "trace/a", nonce, ct, []byte("aad"))
	require.NoError(t, err)
	require.Equal(t, "secret", string(plain))
	gone, err := rotated.Destroyed(ctx, "trace/b")
	require.NoError(t, err)
	require.True(t, gone)
	_, _, err = rotated.Seal(ctx, "trace/b", []byte("again"), nil)
	require.ErrorIs(t, err, keyring.ErrDestroyed)

	stale, err := keyring.New(pool, oldKey)
	require.NoError(t, err)
	_, err = stale.Open(ctx, "trace/a", nonce, ct, []byte("aad"))
	require.ErrorContains(t, err, "CRITIC_MASTER_KEY_FILE")
}

func TestMasterKeyFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "master_key")
	k, err := keyring.CreateMasterKeyFile(path)
	require.NoError(t, err)
	require.Len(t, k, keyring.KeySize)
	again, err := keyring.CreateMasterKeyFile(path)
	require.NoError(t, err)
	require.Equal(t, k, again, "an existing file is kept")
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())

	raw := filepath.Join(dir, "raw")
	require.NoError(t, os.WriteFile(raw, k, 0o600))
	got, err := keyring.ReadMasterKey(raw)
	require.NoError(t, err)
	require.Equal(t, k, got)
	url := filepath.Join(dir, "url")
	require.NoError(t, os.WriteFile(url, []byte(base64.RawURLEncoding.EncodeToString(k)+"\n"), 0o600))
	got, err = keyring.ReadMasterKey(url)
	require.NoError(t, err)
	require.Equal(t, k, got)

	short := filepath.Join(dir, "short")
	require.NoError(t, os.WriteFile(short, []byte("c2hvcnQ="), 0o600))
	_, err = keyring.ReadMasterKey(short)
	require.ErrorContains(t, err, "want 32 random bytes")
}

// A scope named twice in one call gets one key, the one stored.
func TestEnsureNamesAScopeOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	master := randomKey()
	ring, err := keyring.New(pool, master)
	require.NoError(t, err)
	_, err = ring.Ensure(ctx, []string{"trace/a", "trace/b", "trace/a"})
	require.NoError(t, err)
	nonce, ct, err := ring.Seal(ctx, "trace/a", []byte("x"), nil)
	require.NoError(t, err)
	fresh, err := keyring.New(pool, master)
	require.NoError(t, err)
	plain, err := fresh.Open(ctx, "trace/a", nonce, ct, nil)
	require.NoError(t, err, "the cached key is the stored one")
	require.Equal(t, "x", string(plain))
}

// The first start records the master key's fingerprint; a ring with another
// key is refused with an error naming CRITIC_MASTER_KEY_FILE; rotation
// moves the fingerprint to the new key. A database with data keys but no
// fingerprint (made before it existed) records one only for a key that
// opens them.
func TestMasterKeyFingerprint(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	first, other, next := randomKey(), randomKey(), randomKey()
	ring, err := keyring.New(pool, first)
	require.NoError(t, err)
	_, _, err = ring.Seal(ctx, "trace/a", []byte("secret"), nil)
	require.NoError(t, err)

	wrong, err := keyring.New(pool, other)
	require.NoError(t, err)
	require.ErrorContains(t, wrong.CheckMaster(ctx), "does not open with this master key (CRITIC_MASTER_KEY_FILE",
		"an older database's data keys decide when no fingerprint is recorded")
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM master_key_fingerprint`).Scan(&n))
	require.Zero(t, n, "a wrong key records nothing")

	require.NoError(t, ring.CheckMaster(ctx))
	require.NoError(t, ring.CheckMaster(ctx), "the same key starts again")
	require.ErrorContains(t, wrong.CheckMaster(ctx), "CRITIC_MASTER_KEY_FILE holds a master key other than")

	_, err = ring.Rotate(ctx, next)
	require.NoError(t, err)
	require.ErrorContains(t, ring.CheckMaster(ctx), "CRITIC_MASTER_KEY_FILE", "after rotation the old key is refused")
	rotated, err := keyring.New(pool, next)
	require.NoError(t, err)
	require.NoError(t, rotated.CheckMaster(ctx))

	fresh := pgtest.NewPool(t)
	empty, err := keyring.New(fresh, other)
	require.NoError(t, err)
	require.NoError(t, empty.CheckMaster(ctx), "a new database takes the first key it is given")
}
