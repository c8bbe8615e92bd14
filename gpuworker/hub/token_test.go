package hub

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain/rewardmodels"
)

// A worker sends the operator's HF_TOKEN only for the default base model
// and the ids CRITIC_HF_TOKEN_MODELS lists (an exact id or an org/
// prefix): any other id a tenant names is fetched anonymously, so the
// operator's private models cannot become a tenant's checkpoint; the
// failure then says why rather than asking for HF_TOKEN. The operator's
// own CLI (no roots) keeps sending it.
func TestHFTokenOnlyForOperatorListedModels(t *testing.T) {
	var mu sync.Mutex
	auth := map[string][]string{} // model id -> Authorization headers seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, file, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/resolve/main/")
		mu.Lock()
		auth[id] = append(auth[id], r.Header.Get("Authorization"))
		mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer hf-operator-secret" {
			w.WriteHeader(http.StatusUnauthorized) // every model here is private
			return
		}
		switch file {
		case "config.json", "tokenizer.json", "model.safetensors":
			_, _ = w.Write([]byte("{}"))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	t.Setenv("HF_ENDPOINT", srv.URL)
	t.Setenv("HF_TOKEN", "hf-operator-secret")
	t.Setenv("CRITIC_DATA_DIR", t.TempDir())
	t.Setenv(EnvTokenModels, " acme/ , other/allowed ")
	t.Setenv(rewardmodels.EnvModelRoots, "")

	c := NewFromEnv()
	require.NoError(t, c.ForTenants(os.Getenv))
	ctx := context.Background()
	for _, id := range []string{rewardmodels.DefaultBaseModel, "acme/private-7b", "other/allowed"} {
		_, err := c.Resolve(ctx, id, "main")
		require.NoError(t, err, id)
		mu.Lock()
		require.NotEmpty(t, auth[id])
		for _, h := range auth[id] {
			require.Equal(t, "Bearer hf-operator-secret", h, "%s is the operator's to fetch with HF_TOKEN", id)
		}
		mu.Unlock()
	}
	for _, id := range []string{"operator-org/secret-model", "other/allowed-not", "acme-corp/model"} {
		_, err := c.Resolve(ctx, id, "main")
		require.ErrorContains(t, err, "without the server's HF_TOKEN unless the operator lists it in CRITIC_HF_TOKEN_MODELS", id)
		require.NotContains(t, err.Error(), "hf-operator-secret")
		mu.Lock()
		require.Equal(t, []string{""}, auth[id], "%s: a tenant's id goes out without Authorization", id)
		mu.Unlock()
	}

	// The operator's own CLI (no roots) fetches what it names with HF_TOKEN.
	cli := NewFromEnv()
	_, err := cli.Resolve(ctx, "operator-org/secret-model", "main")
	require.NoError(t, err)
	mu.Lock()
	require.Equal(t, "Bearer hf-operator-secret", auth["operator-org/secret-model"][1])
	mu.Unlock()
}

func TestParseTokenModels(t *testing.T) {
	got, err := ParseTokenModels(" acme/ ,, org/model-1.5B ")
	require.NoError(t, err)
	require.Equal(t, []string{"acme/", "org/model-1.5B"}, got)
	for _, bad := range []string{"acme", "/x", "a/b/c", "a/../b", "org/ model", "*"} {
		_, err := ParseTokenModels(bad)
		require.ErrorContains(t, err, "CRITIC_HF_TOKEN_MODELS", bad)
	}
}
