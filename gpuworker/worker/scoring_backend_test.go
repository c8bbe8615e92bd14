package worker

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/gpuworker/model"
)

// A small model is scored with its ops in sequence (the operator's
// GOMLX_BACKEND still wins, a large model keeps the default), and the
// worker's engine gives the scores the default engine gives.
func TestSmallModelsScoreWithOpsInSequence(t *testing.T) {
	t.Setenv(model.BackendEnv, "")
	require.Equal(t, "go:ops_sequential,parallelism=-1", ScoringBackend(model.Config{HiddenSize: 128}))
	require.Equal(t, "", ScoringBackend(model.Config{HiddenSize: 1024}))
	t.Setenv(model.BackendEnv, "go:ops_parallel,parallelism=-1")
	require.Equal(t, "go:ops_parallel,parallelism=-1", ScoringBackend(model.Config{HiddenSize: 128}))
	t.Setenv(model.BackendEnv, "")

	base := writeTinyBase(t)
	texts := []string{"user: where is my order?\nassistant: it ships today", "user: hi\nassistant: hello, how can I help?", "user: hi"}
	ours, err := LoadScoringModel(base)
	require.NoError(t, err)
	defer ours.Model.Finalize()
	def, err := model.LoadRewardModel(base)
	require.NoError(t, err)
	defer def.Model.Finalize()
	got, err := ours.Score(texts)
	require.NoError(t, err)
	want, err := def.Score(texts)
	require.NoError(t, err)
	require.InDeltaSlice(t, want, got, 1e-5)
}
