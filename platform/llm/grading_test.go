package llm

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestResolveGrading(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		env     map[string]string
		on      bool
		key     string
		base    string
		wantErr string
	}{
		{name: "nothing set: off", env: map[string]string{"OPENAI_API_KEY": "sk-o"}},
		{name: "explicitly off", env: map[string]string{EnvGradingModel: "off", EnvTypeSafeKey: "ts"}},
		{name: "model with the provider key", env: map[string]string{EnvGradingModel: "openai/grader", "OPENAI_API_KEY": "sk-o"},
			on: true, key: "sk-o", base: DefaultOpenAIBaseURL},
		{name: "TYPESAFE_API_KEY is the grading key", env: map[string]string{EnvGradingModel: "openai/grader", EnvTypeSafeKey: "ts",
			"OPENAI_API_KEY": "sk-o", "CRITIC_GRADING_API_BASE": "http://grader.local/v1"}, on: true, key: "ts", base: "http://grader.local/v1"},
		{name: "any OpenAI-compatible server without a key", env: map[string]string{EnvGradingModel: "openai/qwen", "CRITIC_GRADING_API_BASE": "http://vllm:8000/v1"},
			on: true, base: "http://vllm:8000/v1"},
		{name: "anthropic through TYPESAFE_API_KEY", env: map[string]string{EnvGradingModel: "anthropic/claude-haiku-4-5", EnvTypeSafeKey: "ts"},
			on: true, key: "ts", base: DefaultAnthropicBaseURL},
		{name: "key without a model", env: map[string]string{EnvTypeSafeKey: "ts"}, wantErr: "set CRITIC_GRADING_MODEL"},
		{name: "model without a key", env: map[string]string{EnvGradingModel: "openai/grader"}, wantErr: "set OPENAI_API_KEY"},
		{name: "bad model string", env: map[string]string{EnvGradingModel: "grader", EnvTypeSafeKey: "ts"}, wantErr: "<provider>/<model>"},
	}
	for _, c := range cases {
		m, on, err := ResolveGrading(func(k string) string { return c.env[k] })
		if c.wantErr != "" {
			require.Error(t, err, c.name)
			require.Contains(t, err.Error(), c.wantErr, c.name)
			require.Contains(t, err.Error(), EnvGradingModel, c.name)
			require.False(t, on, c.name)
			continue
		}
		require.NoError(t, err, c.name)
		require.Equal(t, c.on, on, c.name)
		if c.on {
			require.Equal(t, c.key, m.APIKey, c.name)
			require.Equal(t, c.base, m.APIBase, c.name)
			require.Equal(t, EnvGradingModel, m.Role, c.name)
		}
	}
}
