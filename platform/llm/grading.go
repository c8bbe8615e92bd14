package llm

import "strings"

// The grading role (spec 001 "Step scores", quality checks): the model
// asked one multiple-choice question about each step the labels leave
// open. The spec turns quality checks on with TYPESAFE_API_KEY; Critic
// names the model itself, so any OpenAI-compatible model can grade.
const (
	// EnvGradingModel is the grading model's LiteLLM string. It has no
	// default: without it there are no quality checks and the step scores
	// are the rules alone.
	EnvGradingModel = "CRITIC_GRADING_MODEL"
	// EnvTypeSafeKey is the spec's switch for quality checks: when set it
	// is the grading model's API key (in place of OPENAI_API_KEY or
	// ANTHROPIC_API_KEY, for this role only).
	EnvTypeSafeKey = "TYPESAFE_API_KEY"
)

// ResolveGrading reads the grading role. It returns the model and true
// when quality checks are on; false with a nil error when they are simply
// not configured (neither variable set, or CRITIC_GRADING_MODEL=off); and
// a *ConfigError naming the variable to set when they were asked for but
// cannot run (TYPESAFE_API_KEY without a model, a model without a key).
// CRITIC_GRADING_API_BASE points the role at any OpenAI-compatible server.
func ResolveGrading(getenv Getenv) (Model, bool, error) {
	s := strings.TrimSpace(getenv(EnvGradingModel))
	key := getenv(EnvTypeSafeKey)
	switch {
	case strings.EqualFold(s, "off"), s == "" && key == "":
		return Model{}, false, nil
	case s == "":
		return Model{}, false, &ConfigError{Role: EnvGradingModel, Reason: EnvTypeSafeKey +
			" is set but no grading model is named; set " + EnvGradingModel + " (e.g. openai/<model>, with CRITIC_GRADING_API_BASE for an OpenAI-compatible grading server)"}
	}
	env := getenv
	if key != "" {
		env = func(k string) string {
			if k == "OPENAI_API_KEY" || k == "ANTHROPIC_API_KEY" {
				return key
			}
			return getenv(k)
		}
	}
	m, err := ResolveRole(env, EnvGradingModel, "")
	if err != nil {
		return Model{}, false, err
	}
	return m, true, nil
}
