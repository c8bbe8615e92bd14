package blob_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/handlers/blobdl"
	"github.com/criticml/critic/platform/blob"
)

// newLocal returns a local store whose signed URLs point at the download
// handler served by an httptest server, as the API serves it.
func newLocal(t *testing.T) *blob.Local {
	t.Helper()
	l, err := blob.NewLocal(t.TempDir())
	require.NoError(t, err)
	srv := httptest.NewServer(blobdl.Handler(l))
	t.Cleanup(srv.Close)
	require.NoError(t, l.SetPublicURL(srv.URL))
	return l
}

func TestLocalStore(t *testing.T) {
	runSuite(t, localParams, func(t *testing.T) blob.Store { return newLocal(t) })
}

func TestLocalSigningKeyIsCreatedOnceAndPrivate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	a, err := blob.NewLocal(dir)
	require.NoError(t, err)
	fi, err := os.Stat(blob.DefaultSigningKeyPath(dir))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	require.Equal(t, int64(32), fi.Size())
	// The secret is not among the files it signs for.
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries)

	// A restarted API (a new store on the same directory) honours links the
	// previous one handed out.
	b, err := blob.NewLocal(dir)
	require.NoError(t, err)
	srv := httptest.NewServer(blobdl.Handler(b))
	t.Cleanup(srv.Close)
	require.NoError(t, a.SetPublicURL(srv.URL))
	require.NoError(t, a.Put(ctx, "m/weights.tar.gz", []byte("weights")))
	u, err := a.SignedURL(ctx, "m/weights.tar.gz", time.Minute)
	require.NoError(t, err)
	res, err := http.Get(u)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)

	// A store with another secret does not.
	other, err := blob.NewLocal(dir, blob.WithSigningSecret([]byte("0123456789abcdef0123456789abcdef")))
	require.NoError(t, err)
	srv2 := httptest.NewServer(blobdl.Handler(other))
	t.Cleanup(srv2.Close)
	require.NoError(t, a.SetPublicURL(srv2.URL))
	u, err = a.SignedURL(ctx, "m/weights.tar.gz", time.Minute)
	require.NoError(t, err)
	res, err = http.Get(u)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusForbidden, res.StatusCode)

	// The secret itself can never be read or overwritten through a key.
	_, err = a.Get(ctx, blob.LegacySigningKeyFile)
	require.ErrorIs(t, err, blob.ErrInvalidKey)
}

// TestLocalSigningKeyMovesOutOfTheBlobDirectory: a secret an older version
// kept inside the blob directory is moved out on start, and links signed
// with it keep working.
func TestLocalSigningKeyMovesOutOfTheBlobDirectory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	secret := []byte("an-old-secret-of-32-bytes-or-mor")
	require.NoError(t, os.WriteFile(filepath.Join(dir, blob.LegacySigningKeyFile), secret, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kept"), []byte("blob"), 0o644))

	old, err := blob.NewLocal(t.TempDir(), blob.WithSigningSecret(secret))
	require.NoError(t, err)
	l, err := blob.NewLocal(dir)
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(dir, blob.LegacySigningKeyFile))
	require.ErrorIs(t, err, os.ErrNotExist, "the secret is still inside the blob directory")
	moved, err := os.ReadFile(blob.DefaultSigningKeyPath(dir))
	require.NoError(t, err)
	require.Equal(t, secret, moved)
	got, err := l.Get(ctx, "kept")
	require.NoError(t, err)
	require.Equal(t, "blob", string(got))

	// A link the old process signed is honoured by the migrated store.
	srv := httptest.NewServer(blobdl.Handler(l))
	t.Cleanup(srv.Close)
	require.NoError(t, old.SetPublicURL(srv.URL))
	u, err := old.SignedURL(ctx, "kept", time.Minute)
	require.NoError(t, err)
	res, err := http.Get(u)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)

	// Restarting changes nothing.
	_, err = blob.NewLocal(dir)
	require.NoError(t, err)
	again, err := os.ReadFile(blob.DefaultSigningKeyPath(dir))
	require.NoError(t, err)
	require.Equal(t, secret, again)

	// A stale copy reappearing inside (a restored backup) is removed; the
	// secret outside wins.
	require.NoError(t, os.WriteFile(filepath.Join(dir, blob.LegacySigningKeyFile), []byte("another-secret-of-32-bytes-or-mo"), 0o600))
	_, err = blob.NewLocal(dir)
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(dir, blob.LegacySigningKeyFile))
	require.ErrorIs(t, err, os.ErrNotExist)
	again, err = os.ReadFile(blob.DefaultSigningKeyPath(dir))
	require.NoError(t, err)
	require.Equal(t, secret, again)
}

func TestLocalSigningKeyFileOption(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	keyFile := filepath.Join(t.TempDir(), "secrets", "blob.key")
	_, err := blob.NewLocal(dir, blob.WithSigningKeyFile(keyFile))
	require.NoError(t, err)
	fi, err := os.Stat(keyFile)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	_, err = os.Stat(blob.DefaultSigningKeyPath(dir))
	require.ErrorIs(t, err, os.ErrNotExist)

	_, err = blob.NewLocal(dir, blob.WithSigningKeyFile(filepath.Join(dir, "sub", "key")))
	require.ErrorContains(t, err, "inside the blob directory")
}

func TestLocalOptions(t *testing.T) {
	t.Parallel()
	_, err := blob.NewLocal(t.TempDir(), blob.WithSigningSecret([]byte("short")))
	require.Error(t, err)

	l, err := blob.NewLocal(t.TempDir())
	require.NoError(t, err)
	_, err = l.SignedURL(context.Background(), "k", time.Minute)
	require.ErrorContains(t, err, "CRITIC_PUBLIC_URL", "no public URL yet")
	require.Error(t, l.SetPublicURL("localhost:8080"))
	require.Error(t, l.SetPublicURL("ftp://host"))

	l, err = blob.NewLocal(t.TempDir(), blob.WithPublicURL("https://critic.example.com/prefix/"))
	require.NoError(t, err)
	u, err := l.SignedURL(context.Background(), "checkpoints/a b/w.tar.gz", time.Minute)
	require.NoError(t, err)
	require.Regexp(t, `^https://critic\.example\.com/prefix/blobs/checkpoints/a%20b/w\.tar\.gz\?expires=\d+&sig=[0-9a-f]{64}$`, u)
}

func TestParseURL(t *testing.T) {
	t.Parallel()
	loc, err := blob.ParseURL("file:///var/lib/critic/blobs")
	require.NoError(t, err)
	require.Equal(t, blob.Location{Scheme: "file", Dir: "/var/lib/critic/blobs"}, loc)

	loc, err = blob.ParseURL("s3://my-bucket/critic/prod/")
	require.NoError(t, err)
	require.Equal(t, blob.Location{Scheme: "s3", Bucket: "my-bucket", Prefix: "critic/prod"}, loc)

	loc, err = blob.ParseURL("s3://my-bucket")
	require.NoError(t, err)
	require.Equal(t, blob.Location{Scheme: "s3", Bucket: "my-bucket"}, loc)

	for _, bad := range []string{"", "/plain/path", "file://", "s3://", "s3:///prefix", "gs://b/p", "s3://b/p?region=x", "s3://b/../x", "https://bucket.s3.amazonaws.com"} {
		_, err := blob.ParseURL(bad)
		require.Error(t, err, bad)
	}
}
