package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/criticml/critic/platform/keyring"
	"github.com/stretchr/testify/require"
)

// keyedSender returns the client call of the distributed tests: one request
// with the account's key and, when idemKey is set, an Idempotency-Key, so a
// retry after a killed instance is safe; it answers the status and the
// decoded JSON body (nil when the body is not JSON) or the transport error.
func keyedSender(timeout time.Duration) func(method, url, path, key, idemKey string, body []byte) (int, map[string]any, error) {
	client := &http.Client{Timeout: timeout}
	return func(method, url, path, key, idemKey string, body []byte) (int, map[string]any, error) {
		req, err := http.NewRequest(method, url+path, bytes.NewReader(body))
		if err != nil {
			return 0, nil, err
		}
		req.Header.Set("Authorization", "Bearer "+key)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		if idemKey != "" {
			req.Header.Set("Idempotency-Key", idemKey)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var out map[string]any
		_ = json.Unmarshal(b, &out)
		return resp.StatusCode, out, nil
	}
}

// sharedMasterKey creates one master key under root and returns the
// CRITIC_MASTER_KEY_FILE setting that points every process of a
// distributed deployment at it: processes that share a database must
// share the key their trace keys are wrapped with (docs/operations.md).
func sharedMasterKey(t testing.TB, root string) string {
	t.Helper()
	path := filepath.Join(root, "master_key")
	if _, err := os.Stat(path); err != nil {
		_, err := keyring.CreateMasterKeyFile(path)
		require.NoError(t, err)
	}
	return "CRITIC_MASTER_KEY_FILE=" + path
}
