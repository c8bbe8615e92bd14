package main

import (
	"fmt"
	"os"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/platform/llm"
)

// llmRoles are the server's model roles (DESIGN §9), read once from the
// environment: CRITIC_FEEDBACK_MODEL, CRITIC_FAST_MODEL, their providers'
// keys and base URLs, and CRITIC_LLM_CONCURRENCY (the global cap on calls in
// flight per role, default 16). A role without credentials is nil with the
// reason, which names the variable to set.
type llmRoles struct {
	Feedback            *llm.Client
	FeedbackUnavailable string
	Fast                *llm.Client
	FastUnavailable     string
}

func loadLLMRoles() (llmRoles, error) {
	var r llmRoles
	conc, err := envInt("CRITIC_LLM_CONCURRENCY", 16)
	if err != nil {
		return r, err
	}
	if conc < 1 {
		return r, fmt.Errorf("CRITIC_LLM_CONCURRENCY must be at least 1, got %d", conc)
	}
	opts := llm.Options{Concurrency: conc}
	if m, err := llm.ResolveRole(os.Getenv, llm.EnvFeedbackModel, llm.DefaultFeedbackModel); err == nil {
		r.Feedback = llm.New(m, opts)
	} else {
		r.FeedbackUnavailable = err.Error()
	}
	if m, err := llm.ResolveRole(os.Getenv, llm.EnvFastModel, llm.DefaultFastModel); err == nil {
		r.Fast = llm.New(m, opts)
	} else {
		r.FastUnavailable = err.Error()
	}
	return r, nil
}

// commandOptions records, on every new or retried model, whether this
// deployment extracts feedback and with which model.
func (r llmRoles) commandOptions() []commands.Option {
	if r.Feedback != nil {
		return []commands.Option{commands.WithFeedbackModel(r.Feedback.Model().String(), "")}
	}
	return []commands.Option{commands.WithFeedbackModel("", r.FeedbackUnavailable)}
}
