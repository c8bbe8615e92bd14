package main

import (
	"os"
	"strings"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/gpuworker/worker"
	"github.com/criticml/critic/platform/llm"
	"github.com/criticml/critic/platform/telemetry"
)

// llmRoles are the server's model roles (DESIGN §9), read once from the
// environment: CRITIC_FEEDBACK_MODEL, CRITIC_FAST_MODEL, CRITIC_STEP_LABEL_MODEL, their providers'
// keys and base URLs, and CRITIC_LLM_CONCURRENCY (the global cap on calls in
// flight per role, default 16). A role without credentials is nil with the
// reason, which names the variable to set.
type llmRoles struct {
	Feedback            *llm.Client
	FeedbackUnavailable string
	Fast                *llm.Client
	FastUnavailable     string
	// StepLabel is CRITIC_STEP_LABEL_MODEL: the step labeler's model.
	StepLabel            *llm.Client
	StepLabelUnavailable string
	// Grading is CRITIC_GRADING_MODEL (TYPESAFE_API_KEY its key when set):
	// the quality checks' model; nil leaves the step scores to the rules.
	Grading            *llm.Client
	GradingUnavailable string
	// LabelJobs is CRITIC_WORKER_LABEL_JOBS: traces a worker labels at once.
	LabelJobs int
}

func loadLLMRoles() (llmRoles, error) {
	var r llmRoles
	conc, err := envPositiveInt("CRITIC_LLM_CONCURRENCY", 16)
	if err != nil {
		return r, err
	}
	opts := llm.Options{Concurrency: conc}
	if r.LabelJobs, err = envPositiveInt("CRITIC_WORKER_LABEL_JOBS", worker.DefaultLabelJobs); err != nil {
		return r, err
	}
	role := func(env, def string) (*llm.Client, string) {
		m, err := llm.ResolveRole(os.Getenv, env, def)
		if err != nil {
			return nil, err.Error()
		}
		return llm.New(m, opts), ""
	}
	r.Feedback, r.FeedbackUnavailable = role(llm.EnvFeedbackModel, llm.DefaultFeedbackModel)
	r.Fast, r.FastUnavailable = role(llm.EnvFastModel, llm.DefaultFastModel)
	// "off" keeps trace content away from any labeling provider even where
	// the default model's key (OPENAI_API_KEY) is set for other roles.
	if strings.EqualFold(strings.TrimSpace(os.Getenv(llm.EnvStepLabelModel)), "off") {
		r.StepLabelUnavailable = llm.EnvStepLabelModel + "=off: automatic step labeling is turned off; set it to a model (default " +
			llm.DefaultStepLabelModel + ") to label traces"
	} else {
		r.StepLabel, r.StepLabelUnavailable = role(llm.EnvStepLabelModel, llm.DefaultStepLabelModel)
	}
	if m, on, err := llm.ResolveGrading(os.Getenv); err != nil {
		r.GradingUnavailable = err.Error()
	} else if on {
		r.Grading = llm.New(m, opts)
	} else {
		r.GradingUnavailable = "quality checks are off: set " + llm.EnvGradingModel + " (any OpenAI-compatible model) to blend them into step scores"
	}
	return r, nil
}

// commandOptions records, on every new or retried model, whether this
// deployment extracts feedback and with which model (a role has a client
// or the reason it has none, never both).
func (r llmRoles) commandOptions() []commands.Option {
	return []commands.Option{
		commands.WithFeedbackModel(modelName(r.Feedback), r.FeedbackUnavailable),
		commands.WithStepLabelModel(modelName(r.StepLabel), r.StepLabelUnavailable),
	}
}

// modelName is a role's LiteLLM model string ("" when the role has none).
func modelName(c *llm.Client) string {
	if c == nil {
		return ""
	}
	return c.Model().String()
}

// observed returns the roles with every client reporting its provider
// requests to o under its role (feedback, fast, step_label, grading): the
// critic_llm_* metrics. nil o leaves them unobserved.
func (r llmRoles) observed(o llm.Observer) llmRoles {
	if o == nil {
		return r
	}
	observe := func(c *llm.Client, role string) *llm.Client {
		if c == nil {
			return nil
		}
		return c.WithObserver(o, role)
	}
	r.Feedback = observe(r.Feedback, "feedback")
	r.Fast = observe(r.Fast, "fast")
	r.StepLabel = observe(r.StepLabel, "step_label")
	r.Grading = observe(r.Grading, "grading")
	return r
}

// llmObserver is the process's LLM observer: its metrics, or none when
// metrics are off (a nil *metrics.Metrics must not become a non-nil
// interface).
func llmObserver(tel *telemetry.Telemetry) llm.Observer {
	if tel == nil || tel.Metrics == nil {
		return nil
	}
	return tel.Metrics
}

// workerModels puts the roles' clients into a worker's configuration, the
// same for `critic worker` and the worker inside `critic run`.
func (r llmRoles) workerModels(wc *worker.Config, o llm.Observer) {
	r = r.observed(o)
	wc.Feedback, wc.FeedbackUnavailable = r.Feedback, r.FeedbackUnavailable
	wc.Fast, wc.FastUnavailable = r.Fast, r.FastUnavailable
	wc.StepLabelUnavailable, wc.GraderUnavailable = r.StepLabelUnavailable, r.GradingUnavailable
	if r.StepLabel != nil {
		wc.StepLabel = worker.NewLabeler(r.StepLabel)
	}
	if r.Grading != nil {
		wc.Grader = worker.NewGrader(r.Grading)
	}
	wc.LabelJobs = r.LabelJobs
	wc.LLMObserver = o
}
