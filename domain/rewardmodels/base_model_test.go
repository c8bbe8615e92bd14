package rewardmodels

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain"
)

func TestCheckBaseModel(t *testing.T) {
	t.Parallel()
	roots := []string{"/srv/critic/.data/models", "/mnt/models"}
	for _, ok := range []string{"Qwen/Qwen3-0.6B", "meta-llama/Llama-3.2-1B", "/srv/critic/.data/models/demo-qwen3-tiny",
		"/mnt/models/team/base", "/mnt/models/a/../b"} {
		require.NoError(t, CheckBaseModel(ok, roots), ok)
	}
	for _, bad := range []string{"/etc", "/etc/passwd", "/srv/critic/.data/worker/checkpoints/3f2a/x", "/srv/critic/.data/models",
		"/srv/critic/.data/models/../worker/checkpoints/3f2a", "/mnt/models/../../etc", "/mnt/modelsevil/x", ".data/models/demo",
		"../models/x", "./x", "gpt2", "Qwen/../etc", "Qwen/Qwen3/extra", "", `C:\models\x`, "a/b c"} {
		err := CheckBaseModel(bad, roots)
		var ve *domain.ValidationError
		require.True(t, errors.As(err, &ve), bad)
		require.Equal(t, "base_model", ve.Field)
		require.NotContains(t, ve.Message, "/srv", "a server path leaked")
	}
	require.ErrorIs(t, CheckBaseModel("/srv/critic/.data/models/x", nil), ErrBaseModel, "no roots: hub ids only")
}

func TestParseModelRoots(t *testing.T) {
	t.Parallel()
	r, err := ParseModelRoots(" /mnt/models/ ,, /opt/m")
	require.NoError(t, err)
	require.Equal(t, []string{"/mnt/models", "/opt/m"}, r)
	_, err = ParseModelRoots("/ok,models")
	require.ErrorContains(t, err, EnvModelRoots)
}
