package worker

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/platform/logtest"
)

// A hub download that fails on the worker's disk (here a file where the
// model cache directory should be, so mkdir fails) fails the model with an
// error its owner reads: it says what failed but names no path of the
// worker; the worker's own log keeps the full error, path included.
func TestHubCacheErrorsNameNoWorkerPath(t *testing.T) {
	s := newSetup(t)
	hubSrv := httptest.NewServer(http.NotFoundHandler())
	defer hubSrv.Close()
	t.Setenv("HF_ENDPOINT", hubSrv.URL)
	require.NoError(t, os.WriteFile(filepath.Join(s.data, "models"), []byte("not a directory"), 0o644))
	var logs logtest.Buffer
	cfg := s.config(t, "w-1")
	cfg.Log = slog.New(slog.NewTextHandler(&logs, nil))
	w, err := New(cfg) // its hub: the data dir's cache, confined to tenants' rules
	require.NoError(t, err)
	id, _ := s.api.queueTraining(t, "Qwen/Qwen3-0.6B")

	require.True(t, w.HandleTrain(context.Background(), mustJSON(t, s.api.trainMessage(id))))
	m := s.api.status(t, id)
	require.Equal(t, rewardmodels.StatusFailed, m.Status)
	msg := m.Error
	require.Contains(t, msg, "training failed: base model Qwen/Qwen3-0.6B: mkdir <worker path>: not a directory")
	require.NotContains(t, msg, s.data)
	require.NotContains(t, msg, "/models")

	require.Contains(t, logs.String(), filepath.Join(s.data, "models"), "the worker's log has the path")
}
