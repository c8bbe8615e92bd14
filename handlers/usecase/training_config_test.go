package usecase

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain"
)

func TestParseTrainingConfigNamesTheField(t *testing.T) {
	t.Parallel()
	for raw, field := range map[string]string{
		`{"rubric": 1}`:            "training_config.rubric",
		`{"input_version": "3"}`:   "training_config.input_version",
		`{"annotation_source": 2}`: "training_config.annotation_source",
		`{"criteria": "be nice"}`:  "training_config.criteria",
		`[]`:                       "training_config",
	} {
		_, err := ParseTrainingConfig(json.RawMessage(raw))
		var ve *domain.ValidationError
		require.ErrorAs(t, err, &ve, raw)
		require.Equal(t, field, ve.Field, raw)
	}
	cfg, err := ParseTrainingConfig(json.RawMessage(`{"annotation_source":"explicit","input_version":3,"criteria":["a","b"]}`))
	require.NoError(t, err)
	require.Equal(t, "explicit", *cfg.AnnotationSource)
	require.Equal(t, 3, *cfg.InputVersion)
	require.Equal(t, []string{"a", "b"}, cfg.Criteria)
	require.True(t, cfg.CriteriaSet)
	for _, absent := range []string{``, `null`, `{}`} {
		cfg, err := ParseTrainingConfig(json.RawMessage(absent))
		require.NoError(t, err)
		if absent == `{}` {
			require.NotNil(t, cfg)
			require.Nil(t, cfg.AnnotationSource)
		} else {
			require.Nil(t, cfg)
		}
	}
}
