// Package llm is the one provider layer for every model call Critic makes
// (DESIGN §9): feedback extraction, AI judgments and their reviews, titles,
// and later GEPA and step labels. It speaks the OpenAI chat-completions
// protocol through github.com/sashabaranov/go-openai, to OpenAI, to
// Anthropic's OpenAI-compatible endpoint, or to any OpenAI-compatible server
// (vLLM, SGLang, Ollama, llama.cpp) given an explicit api_base.
//
// What it guarantees to callers: answers are JSON that passed the request's
// schema (checked here, on receipt, whatever the provider promised), 429 and
// 5xx answers are retried with backoff honouring Retry-After, every attempt
// has a deadline, concurrency is capped per client, token usage is returned
// per call, and every error names what is wrong — the variable to set, the
// provider and HTTP status, or the field that failed validation.
package llm

import (
	"cmp"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/criticml/critic/platform/egress"
)

// Providers a model string can name (LiteLLM's prefixes).
const (
	ProviderOpenAI    = "openai"
	ProviderAnthropic = "anthropic"
)

// Public endpoints used when no base URL is configured.
const (
	DefaultOpenAIBaseURL    = "https://api.openai.com/v1"
	DefaultAnthropicBaseURL = "https://api.anthropic.com/v1/"
)

// Server roles: each is a model string read from its variable, with a
// documented default (docs/configuration.md).
const (
	// EnvFeedbackModel is the classifier for comments and user reactions,
	// the AI judgments and their independent reviews.
	EnvFeedbackModel = "CRITIC_FEEDBACK_MODEL"
	// EnvFastModel writes trace titles (spec 001: the fast Anthropic model).
	EnvFastModel = "CRITIC_FAST_MODEL"
	// EnvStepLabelModel labels every chunk of every trace (spec 001 "Step
	// labels": STEP_LABEL_MODEL, default gpt-6-sol through OPENAI_API_KEY).
	EnvStepLabelModel = "CRITIC_STEP_LABEL_MODEL"

	DefaultFeedbackModel  = "anthropic/claude-sonnet-4-5"
	DefaultFastModel      = "anthropic/claude-haiku-4-5"
	DefaultStepLabelModel = "openai/gpt-6-sol"
)

// Model is a parsed LiteLLM model string plus where and how to reach it.
type Model struct {
	Provider string // ProviderOpenAI or ProviderAnthropic
	Name     string // the provider's model id, e.g. gpt-4.1-mini
	// APIBase is the endpoint (…/v1); empty means the provider's default.
	APIBase string
	// APIKey authenticates; may be empty for a local server with an
	// explicit APIBase.
	APIKey string
	// Role is the variable the model string came from (for error messages).
	Role string
	// HTTPClient, set by ResolveTenant for a base a tenant named, is the
	// egress-guarded client every request to it must go through; it wins
	// over Options.HTTPClient.
	HTTPClient *http.Client
}

// String is the LiteLLM model string, which is also what findings record as
// their classifier model.
func (m Model) String() string { return m.Provider + "/" + m.Name }

// ParseModel splits a LiteLLM model string ("openai/gpt-4.1-mini",
// "anthropic/claude-haiku-4-5"). Models of an OpenAI-compatible server are
// written "openai/<name>" with an explicit api base.
func ParseModel(s string) (Model, error) {
	provider, name, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok || name == "" {
		return Model{}, fmt.Errorf("model %q: write it as <provider>/<model>, e.g. openai/gpt-4.1-mini or anthropic/claude-haiku-4-5", s)
	}
	switch provider {
	case ProviderOpenAI, ProviderAnthropic:
	default:
		return Model{}, fmt.Errorf("model %q: unknown provider %q (supported: openai, anthropic; use openai/<model> with an api base for any OpenAI-compatible server)", s, provider)
	}
	return Model{Provider: provider, Name: name}, nil
}

// Getenv reads a variable; os.Getenv in production, a map in tests.
type Getenv func(string) string

// ConfigError says a role cannot be used and which variable fixes it.
type ConfigError struct {
	Role     string // e.g. CRITIC_FEEDBACK_MODEL
	Model    string // the model string the role resolved to
	Variable string // what to set, e.g. ANTHROPIC_API_KEY
	Reason   string
}

func (e *ConfigError) Error() string {
	if e.Variable == "" {
		return fmt.Sprintf("%s: %s", e.Role, e.Reason)
	}
	return fmt.Sprintf("%s is %s: %s; set %s (or choose another model with %s)", e.Role, e.Model, e.Reason, e.Variable, e.Role)
}

// ResolveRole reads a role's model string (role variable, else def) and the
// key and base URL of its provider: OPENAI_API_KEY / OPENAI_BASE_URL or
// ANTHROPIC_API_KEY / ANTHROPIC_BASE_URL, and <ROLE>_API_BASE (e.g.
// CRITIC_FEEDBACK_API_BASE) for an explicit api base, which wins over the
// provider's base URL. A role without usable credentials is a *ConfigError
// naming the variable to set.
func ResolveRole(getenv Getenv, role, def string) (Model, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	s := cmp.Or(getenv(role), def)
	m, err := ParseModel(s)
	if err != nil {
		return Model{}, &ConfigError{Role: role, Reason: err.Error()}
	}
	m.Role = role
	explicit := getenv(strings.TrimSuffix(role, "_MODEL") + "_API_BASE")
	switch m.Provider {
	case ProviderOpenAI:
		m.APIKey = getenv("OPENAI_API_KEY")
		m.APIBase = cmp.Or(explicit, getenv("OPENAI_BASE_URL"))
		if m.APIKey == "" && m.APIBase == "" {
			return m, &ConfigError{Role: role, Model: s, Variable: "OPENAI_API_KEY", Reason: "no OpenAI API key is configured"}
		}
		m.APIBase = cmp.Or(m.APIBase, DefaultOpenAIBaseURL)
	case ProviderAnthropic:
		m.APIKey = getenv("ANTHROPIC_API_KEY")
		m.APIBase = cmp.Or(explicit, getenv("ANTHROPIC_BASE_URL"), DefaultAnthropicBaseURL)
		if m.APIKey == "" {
			return m, &ConfigError{Role: role, Model: s, Variable: "ANTHROPIC_API_KEY", Reason: "no Anthropic API key is configured"}
		}
	}
	return m, nil
}

// ResolveTenant resolves a model string and api base that came with a
// tenant's request (field names the request field, for errors). The rule
// (platform/egress): a tenant-named base never gets an operator credential.
// It gets the key the tenant supplied (apiKey), else — when an operator
// allowed its prefix in CRITIC_ALLOWED_API_BASES with a key variable — that
// variable's key, else no key at all (no Authorization header). Only a base
// equal to the provider's own (OPENAI_BASE_URL / ANTHROPIC_BASE_URL or the
// public default) is the operator's endpoint and keeps the provider's key,
// exactly as if no base had been named. Every other base is reached through
// egress.Policy.Client, which refuses non-public addresses unless allowed.
func ResolveTenant(getenv Getenv, field, modelString, apiBase, apiKey string) (Model, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	m, err := ParseModel(modelString)
	if err != nil {
		return Model{}, &ConfigError{Role: field, Reason: err.Error()}
	}
	m.Role = field
	if err := egress.CheckURL(apiBase); err != nil {
		return Model{}, &ConfigError{Role: field, Reason: "its api base " + err.Error()}
	}
	policy, err := egress.Parse(getenv(egress.EnvAllowedAPIBases))
	if err != nil {
		return Model{}, &ConfigError{Role: field, Reason: err.Error()}
	}
	m.APIBase = apiBase
	keyVar, own := "OPENAI_API_KEY", cmp.Or(getenv("OPENAI_BASE_URL"), DefaultOpenAIBaseURL)
	if m.Provider == ProviderAnthropic {
		keyVar, own = "ANTHROPIC_API_KEY", cmp.Or(getenv("ANTHROPIC_BASE_URL"), DefaultAnthropicBaseURL)
	}
	if apiKey == "" && egress.SameURL(apiBase, own) {
		m.APIKey = getenv(keyVar)
		if m.APIKey == "" {
			return m, &ConfigError{Role: field, Model: m.String(), Variable: keyVar, Reason: "no " + m.Provider + " API key is configured"}
		}
		return m, nil
	}
	m.APIKey = apiKey
	if a, ok := policy.Covers(apiBase); ok && apiKey == "" && a.KeyVar != "" {
		if m.APIKey = getenv(a.KeyVar); m.APIKey == "" {
			return m, &ConfigError{Role: field, Model: m.String(), Variable: a.KeyVar,
				Reason: egress.EnvAllowedAPIBases + " names " + a.KeyVar + " as the key of " + a.Prefix + " but it is empty"}
		}
	}
	m.HTTPClient = policy.Client(apiBase)
	return m, nil
}
