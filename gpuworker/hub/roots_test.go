package hub

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A worker's hub, confined to its roots, refuses /etc and another owner's
// cached checkpoint (DataDir/worker/checkpoints) without touching them, and
// no error names a server path; a directory under a root resolves.
func TestResolveConfinedToRoots(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	ckpt := filepath.Join(data, "worker", "checkpoints", "abc123", "x")
	inside := filepath.Join(data, "models", "demo")
	for _, d := range []string{ckpt, inside} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	c := &Client{Endpoint: "http://127.0.0.1:1", CacheDir: filepath.Join(data, "models")}
	var err error
	c.Roots, err = ModelRoots(c.CacheDir, func(string) string { return "" })
	require.NoError(t, err)

	for _, bad := range []string{"/etc", ckpt, filepath.Join(data, "models", "..", "worker", "checkpoints", "abc123", "x"), data} {
		_, err := c.Resolve(context.Background(), bad, "main")
		require.ErrorContains(t, err, "base_model must be a Hugging Face hub id", bad)
		require.NotContains(t, err.Error(), data)
		require.NotContains(t, err.Error(), "/etc")
	}
	_, err = c.Resolve(context.Background(), filepath.Join(data, "models", "missing"), "main")
	require.EqualError(t, err, "the local base model directory does not exist on this worker")
	dir, err := c.Resolve(context.Background(), inside, "main")
	require.NoError(t, err)
	require.Equal(t, inside, dir)

	// CRITIC_MODEL_ROOTS adds the operator's directories.
	extra := t.TempDir()
	c.Roots, err = ModelRoots(c.CacheDir, func(string) string { return extra })
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(extra, "m"), 0o755))
	_, err = c.Resolve(context.Background(), filepath.Join(extra, "m"), "main")
	require.NoError(t, err)
}
