package gepa

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/criticml/critic/gpuworker/model"
	"github.com/criticml/critic/platform/llm"
)

// CLI implements `critic model gepa`: the same optimizer as the worker's
// gepa job, offline, on a checkpoint directory and a gepa_examples.jsonl,
// writing result.json (spec 001 job contract) to --out.
func CLI(ctx context.Context, args []string, getenv llm.Getenv, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("model gepa", flag.ContinueOnError)
	fs.SetOutput(stderr)
	usage := "critic model gepa --model DIR --examples gepa_examples.jsonl --task-model M --reflection-model M " +
		"[--task-api-base URL] [--max-metric-calls N] [--seed N] --out DIR"
	fs.Usage = func() { fmt.Fprintln(stderr, "usage: "+usage); fs.PrintDefaults() }
	dir := fs.String("model", "", "reward-model checkpoint directory (with reward_stats.json)")
	examples := fs.String("examples", "", "gepa_examples.jsonl")
	taskModel := fs.String("task-model", "anthropic/claude-haiku-4-5", "task model (LiteLLM model string)")
	taskBase := fs.String("task-api-base", "", "OpenAI-compatible endpoint of the task model (vLLM, SGLang, …)")
	reflModel := fs.String("reflection-model", "anthropic/claude-sonnet-5", "reflection model (LiteLLM model string)")
	budget := fs.Int("max-metric-calls", DefaultMaxMetricCalls, "hard cap on task-model calls scored by the reward model")
	seed := fs.Uint64("seed", 0, "seed of parent and minibatch draws")
	inputVersion := fs.Int("input-version", 1, "the reward model's input version (3 for training_config input version 3)")
	maxLen := fs.Int("max-length", 0, "token window of the reward model (default 1024; 4096 for input version 3)")
	out := fs.String("out", "", "output directory (result.json)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" || *examples == "" || *out == "" {
		return errors.New("model gepa: --model, --examples and --out are required")
	}
	exs, err := ReadExamples(*examples)
	if err != nil {
		return err
	}
	task, err := ResolveModel(getenv, "task", *taskModel, *taskBase)
	if err != nil {
		return err
	}
	refl, err := ResolveModel(getenv, "reflection", *reflModel, "")
	if err != nil {
		return err
	}
	rm, err := model.LoadRewardModel(*dir)
	if err != nil {
		return fmt.Errorf("loading the reward model %s: %w", *dir, err)
	}
	defer rm.Model.Finalize()
	if *maxLen > 0 {
		rm.MaxLen = *maxLen
	} else if *inputVersion == 3 {
		rm.MaxLen = 4096
	}
	sc, err := NewRewardScorer(rm)
	if err != nil {
		return err
	}
	res, err := Optimize(ctx, Config{Examples: exs, Task: llm.New(task, llm.Options{}), Reflection: llm.New(refl, llm.Options{}),
		Scorer: sc, MaxMetricCalls: *budget, Seed: *seed, InputVersion: *inputVersion, Log: stderr})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(*out, "result.json"), append(data, '\n'), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "best_score %.4f seed_score %.4f metric_calls %d/%d → %s\n", res.BestScore, res.SeedScore,
		res.MetricCalls, res.MaxMetricCalls, filepath.Join(*out, "result.json"))
	return nil
}

// ResolveModel turns an operator's model string and optional api base (the
// CLI's flags, the environment) into an llm.Model with the provider's key
// from the environment; the error names the variable to set. A base from a
// tenant's request goes through ResolveTenantModel instead.
func ResolveModel(getenv llm.Getenv, role, modelString, apiBase string) (llm.Model, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	prefix := "CRITIC_GEPA_" + map[string]string{"task": "TASK", "reflection": "REFLECTION"}[role]
	roleVar, baseVar := prefix+"_MODEL", prefix+"_API_BASE"
	m, err := llm.ResolveRole(func(k string) string {
		switch k {
		case roleVar:
			return modelString
		case baseVar:
			return apiBase
		}
		return getenv(k)
	}, roleVar, modelString)
	if ce, ok := errors.AsType[*llm.ConfigError](err); ok {
		// The model string came from the run's request, not a variable:
		// name the request field.
		ce.Role = role + "_model"
	}
	return m, err
}

// ResolveTenantModel resolves a run's model as its request named it. An
// api base from the request is a tenant's URL: it goes through
// llm.ResolveTenant (the tenant's own key or the operator's allow-list,
// never the provider key; the egress guard on every connection). Without
// one the model uses the operator's provider configuration, as ResolveModel.
func ResolveTenantModel(getenv llm.Getenv, role, modelString, apiBase, apiKey string) (llm.Model, error) {
	if apiBase == "" {
		return ResolveModel(getenv, role, modelString, "")
	}
	return llm.ResolveTenant(getenv, role+"_api_base", modelString, apiBase, apiKey)
}

// ReadExamples reads gepa_examples.jsonl, strictly: a line that is not an
// example is an error naming the line.
func ReadExamples(path string) ([]Example, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Example
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		var ex Example
		if err := dec.Decode(&ex); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", path, n, err)
		}
		out = append(out, ex)
	}
	return out, sc.Err()
}
