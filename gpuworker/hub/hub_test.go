package hub

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// fakeHub serves /<id>/resolve/<rev>/<file> from files; needToken makes every request
// without "Bearer secret" a 401, as the hub does for gated models.
func fakeHub(t *testing.T, files map[string]string, needToken bool) (*httptest.Server, *atomic.Int32) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if needToken && r.Header.Get("Authorization") != "Bearer secret" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		body, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func TestDownloadSingleFileAndCache(t *testing.T) {
	srv, hits := fakeHub(t, map[string]string{
		"/Qwen/Qwen3-0.6B/resolve/main/config.json":         `{"architectures":["Qwen3ForCausalLM"]}`,
		"/Qwen/Qwen3-0.6B/resolve/main/tokenizer.json":      `{}`,
		"/Qwen/Qwen3-0.6B/resolve/main/model.safetensors":   "weights",
		"/Qwen/Qwen3-0.6B/resolve/main/chat_template.jinja": "{{ messages }}",
	}, false)
	c := &Client{Endpoint: srv.URL, CacheDir: t.TempDir()}
	dir, err := c.Resolve(context.Background(), "Qwen/Qwen3-0.6B", "")
	require.NoError(t, err)
	require.Equal(t, filepath.Join(c.CacheDir, "Qwen", "Qwen3-0.6B", "main"), dir)
	data, err := os.ReadFile(filepath.Join(dir, "model.safetensors"))
	require.NoError(t, err)
	require.Equal(t, "weights", string(data))
	require.FileExists(t, filepath.Join(dir, "chat_template.jinja"))
	require.NoFileExists(t, filepath.Join(dir, "tokenizer_config.json"), "optional 404 is skipped")
	entries, _ := os.ReadDir(filepath.Dir(dir))
	require.Len(t, entries, 1, "no temporary directory left behind")

	n := hits.Load()
	_, err = c.Resolve(context.Background(), "Qwen/Qwen3-0.6B", "main")
	require.NoError(t, err)
	require.Equal(t, n, hits.Load(), "second resolve is served from the cache")
}

func TestDownloadShardedWithToken(t *testing.T) {
	srv, _ := fakeHub(t, map[string]string{
		"/org/big/resolve/v1/config.json":    `{}`,
		"/org/big/resolve/v1/tokenizer.json": `{}`,
		"/org/big/resolve/v1/model.safetensors.index.json": `{"weight_map":{"a":"model-00001-of-00002.safetensors",
			"b":"model-00002-of-00002.safetensors","c":"model-00001-of-00002.safetensors"}}`,
		"/org/big/resolve/v1/model-00001-of-00002.safetensors": "one",
		"/org/big/resolve/v1/model-00002-of-00002.safetensors": "two",
	}, true)
	c := &Client{Endpoint: srv.URL, CacheDir: t.TempDir()}
	_, err := c.Download(context.Background(), "org/big", "v1")
	require.ErrorContains(t, err, "set HF_TOKEN")
	c.Token = "wrong"
	_, err = c.Download(context.Background(), "org/big", "v1")
	require.ErrorContains(t, err, "HF_TOKEN was refused")
	c.Token = "secret"
	dir, err := c.Download(context.Background(), "org/big", "v1")
	require.NoError(t, err)
	for _, f := range []string{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors", "model.safetensors.index.json"} {
		require.FileExists(t, filepath.Join(dir, f))
	}
}

func TestMissingRequiredFileAndLocalPath(t *testing.T) {
	srv, _ := fakeHub(t, map[string]string{"/a/b/resolve/main/config.json": `{}`}, false)
	c := &Client{Endpoint: srv.URL, CacheDir: t.TempDir()}
	_, err := c.Download(context.Background(), "a/b", "main")
	require.ErrorContains(t, err, "has no tokenizer.json")
	_, statErr := os.Stat(filepath.Join(c.CacheDir, "a", "b", "main"))
	require.True(t, os.IsNotExist(statErr), "failed downloads leave nothing in the cache")

	local := t.TempDir()
	dir, err := c.Resolve(context.Background(), local, "")
	require.NoError(t, err)
	require.Equal(t, local, dir)
	_, err = c.Resolve(context.Background(), "./missing-dir", "")
	require.ErrorContains(t, err, "does not exist")
	_, err = c.Download(context.Background(), "../etc", "main")
	require.True(t, err != nil && strings.Contains(err.Error(), "invalid"))
}

func TestNewFromEnv(t *testing.T) {
	t.Setenv("HF_ENDPOINT", "http://mirror")
	t.Setenv("HF_TOKEN", "tok")
	t.Setenv("CRITIC_DATA_DIR", "/data")
	c := NewFromEnv()
	require.Equal(t, "http://mirror", c.Endpoint)
	require.Equal(t, "tok", c.Token)
	require.Equal(t, "/data/models", c.CacheDir)
}
