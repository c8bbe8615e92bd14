package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/platform/egress"
)

// RequestGepa is POST /gepa-runs after decoding; nil fields take the spec's
// defaults.
type RequestGepa struct {
	ModelID     string
	TaskModel   *string
	TaskAPIBase *string
	// TaskAPIKey is the requester's own key for TaskAPIBase (sealed in the
	// event, never shown back).
	TaskAPIKey      *string
	ReflectionModel *string
	MaxMetricCalls  *int
}

// RequestGepaResult names the new run.
type RequestGepaResult struct {
	Result
	RunID string
}

var modelStringRE = regexp.MustCompile(`^(openai|anthropic)/\S+$`)

// RequestGepaRun validates a request against the caller's model, builds the
// examples from the model's selected traces (stored as gepa_examples.jsonl
// so the worker reads exactly what was requested) and queues the run.
// Another owner's model is a 404, a model that has not succeeded a 422.
type RequestGepaRun struct {
	Actor Actor
	Input RequestGepa
}

// RequestGepaRunHandler runs RequestGepaRun.
type RequestGepaRunHandler struct{ *Streams }

func (c RequestGepaRunHandler) Handle(ctx context.Context, cmd RequestGepaRun) (RequestGepaResult, error) {
	in := cmd.Input
	task, refl, budget := rewardmodels.DefaultGepaTaskModel, rewardmodels.DefaultGepaReflectionModel, rewardmodels.DefaultGepaMaxMetricCalls
	if in.TaskModel != nil {
		task = strings.TrimSpace(*in.TaskModel)
	}
	if in.ReflectionModel != nil {
		refl = strings.TrimSpace(*in.ReflectionModel)
	}
	// In request order, so a request with two bad models always names the
	// first.
	for _, m := range []struct{ field, v string }{{"task_model", task}, {"reflection_model", refl}} {
		if !modelStringRE.MatchString(m.v) {
			return RequestGepaResult{}, domain.InvalidField(m.field, m.field+" must be a LiteLLM model string: openai/<model> or anthropic/<model> (openai/<name> with task_api_base for an OpenAI-compatible server)")
		}
	}
	if in.MaxMetricCalls != nil {
		budget = *in.MaxMetricCalls
		if budget < 1 || budget > rewardmodels.MaxGepaMetricCalls {
			return RequestGepaResult{}, domain.InvalidField("max_metric_calls", fmt.Sprintf("max_metric_calls must be between 1 and %d", rewardmodels.MaxGepaMetricCalls))
		}
	}
	var base *string
	if in.TaskAPIBase != nil {
		// The syntax here; where it may connect is checked by the worker on
		// every dial (platform/egress).
		if err := egress.CheckURL(*in.TaskAPIBase); err != nil {
			return RequestGepaResult{}, domain.InvalidField("task_api_base", "task_api_base "+err.Error())
		}
		base = new(*in.TaskAPIBase)
	}
	var sealed string
	if in.TaskAPIKey != nil && *in.TaskAPIKey != "" {
		if base == nil {
			return RequestGepaResult{}, domain.InvalidField("task_api_key", "task_api_key is sent only to task_api_base: set task_api_base too")
		}
		if len(*in.TaskAPIKey) > 4096 || strings.ContainsAny(*in.TaskAPIKey, "\x00\r\n") {
			return RequestGepaResult{}, domain.InvalidField("task_api_key", "task_api_key must be at most 4096 bytes on one line")
		}
		var err error
		if sealed, err = c.seal(*in.TaskAPIKey); err != nil {
			return RequestGepaResult{}, domain.InvalidField("task_api_key", "task_api_key cannot be accepted: "+err.Error())
		}
	}
	m, err := c.loadModel(ctx, cmd.Actor.UserID, in.ModelID)
	if err != nil {
		return RequestGepaResult{}, err
	}
	if err := rewardmodels.CheckGepaModel(m); err != nil {
		return RequestGepaResult{}, err
	}
	included := map[string]bool{}
	if m.Dataset != nil {
		for _, id := range m.Dataset.IncludedFindings {
			included[id] = true
		}
	}
	var findings []events.Finding
	for _, rec := range m.Extracted {
		for _, f := range rec.Findings {
			if included[f.ID] {
				findings = append(findings, f)
			}
		}
	}
	var buf bytes.Buffer
	n := 0
	// One read of the log for the model's traces; a failed read fails the
	// request (it used to drop the trace as if deleted).
	owned, err := c.ownedTraces(ctx, Actor{UserID: m.OwnerID}, m.Requested.TraceIDs)
	if err != nil {
		return RequestGepaResult{}, err
	}
	for _, id := range m.Requested.TraceIDs {
		tr, ok := owned[id]
		if !ok {
			continue // deleted since training: nothing to replay
		}
		ex, ok := rewardmodels.GepaExampleOf(tr, findings)
		if !ok {
			continue
		}
		line, _ := json.Marshal(ex)
		buf.Write(append(line, '\n'))
		n++
	}
	runID := newID()
	key := jobs.GepaExamplesKey(cmd.Actor.UserID, runID)
	if err := c.store.Blobs().Put(ctx, key, buf.Bytes()); err != nil {
		return RequestGepaResult{}, err
	}
	r, err := c.appendEvent(ctx, cmd.Actor, events.GepaRunStream(runID), cmd.Actor.UserID, 0, events.GepaRunRequested, events.GepaRunRequestedV1{
		RunID: runID, ModelID: m.ID, TaskModel: task, TaskAPIBase: base, TaskAPIKeySealed: sealed, ReflectionModel: refl, MaxMetricCalls: budget,
		ExamplesKey: key, Examples: n, ArtifactKey: m.Success.ArtifactKey, InputVersion: m.Config.InputVersion})
	return RequestGepaResult{Result: r, RunID: runID}, err
}
