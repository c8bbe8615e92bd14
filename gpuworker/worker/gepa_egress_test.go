package worker

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/rewardmodels"
)

// canary is the operator's provider key in these tests: it must never reach
// a base a tenant named.
const canary = "sk-operator-canary-7f3a"

// workerWith is a second worker of g's world whose environment is env (plus
// the operator's reflection base and canary keys).
func (g *gepaWorld) workerWith(t *testing.T, env map[string]string) *Worker {
	cfg := g.config(t, "w-egress")
	cfg.DataDir = t.TempDir()
	cfg.Getenv = func(k string) string {
		switch k {
		case "OPENAI_BASE_URL":
			return g.refl.URL
		case "OPENAI_API_KEY", "ANTHROPIC_API_KEY":
			return canary
		}
		return env[k]
	}
	w, err := New(cfg)
	require.NoError(t, err)
	return w
}

func (g *gepaWorld) run(t *testing.T, w *Worker, runID string) (rewardmodels.GepaState, string) {
	require.True(t, w.Handle(jobs.TopicGepa)(context.Background(), mustJSON(t, jobs.GepaJob{RunID: runID})))
	st, evs := g.stream(t, runID)
	var p events.GepaRunFailedV1
	if st.Status == rewardmodels.RunFailed {
		require.NoError(t, evs[len(evs)-1].Decode(&p))
	}
	return st, p.Error
}

// A tenant-named task base on loopback, with the operator's OpenAI key in
// the worker's environment and no allow-list: the run fails with an error
// that names the refused address and the variable that would allow it, and
// nothing — so no key — reaches the tenant's listener.
func TestGepaTenantBaseOnLoopbackIsRefused(t *testing.T) {
	g := newGepaWorld(t)
	runID := g.request(t, 14)
	st, errText := g.run(t, g.workerWith(t, nil), runID)
	require.Equal(t, rewardmodels.RunFailed, st.Status)
	require.Contains(t, errText, "a loopback address")
	require.Contains(t, errText, "CRITIC_ALLOWED_API_BASES")
	require.NotContains(t, errText, canary)
	require.Zero(t, g.task.Calls(), "the tenant's listener was reached")
}

// An allowed prefix naming a key variable: the listener receives that
// variable's key, never OPENAI_API_KEY; an allowed prefix without one: no
// Authorization header at all.
func TestGepaAllowedBaseGetsItsOwnKeyNotTheProviderKey(t *testing.T) {
	g := newGepaWorld(t)
	w := g.workerWith(t, map[string]string{"CRITIC_ALLOWED_API_BASES": g.task.URL + "/=VLLM_KEY", "VLLM_KEY": "vllm-key-1"})
	st, errText := g.run(t, w, g.request(t, 14))
	require.Equal(t, rewardmodels.RunSucceeded, st.Status, errText)
	reqs := g.task.Requests()
	require.NotEmpty(t, reqs)
	for _, r := range reqs {
		require.Equal(t, "Bearer vllm-key-1", r.Header.Get("Authorization"))
	}

	n := len(reqs)
	w = g.workerWith(t, map[string]string{"CRITIC_ALLOWED_API_BASES": g.task.URL})
	st, errText = g.run(t, w, g.request(t, 14))
	require.Equal(t, rewardmodels.RunSucceeded, st.Status, errText)
	reqs = g.task.Requests()[n:]
	require.NotEmpty(t, reqs)
	for _, r := range reqs {
		require.Empty(t, r.Header.Values("Authorization"))
	}
	// The operator's own base (the reflection model) keeps the operator's key.
	for _, r := range g.refl.Requests()[len(g.refl.Requests())-1:] {
		require.Equal(t, "Bearer "+canary, r.Header.Get("Authorization"))
	}
}

// A key the tenant sends with its request reaches its own (allowed) base
// and nothing else; the event log holds it only sealed.
func TestGepaTenantKeyReachesItsBaseSealed(t *testing.T) {
	g := newGepaWorld(t)
	task, refl, base, budget, key := "openai/task", "openai/reflection", g.task.URL, 14, "sk-tenant-own-91c"
	res, err := g.api.cmds.RequestGepaRun.Handle(context.Background(), commands.RequestGepaRun{Actor: g.api.owner, Input: commands.RequestGepa{ModelID: g.modelID,
		TaskModel: &task, TaskAPIBase: &base, TaskAPIKey: &key, ReflectionModel: &refl, MaxMetricCalls: &budget}})
	require.NoError(t, err)
	w := g.workerWith(t, map[string]string{"CRITIC_ALLOWED_API_BASES": g.task.URL + "=VLLM_KEY", "VLLM_KEY": "vllm-key-1"})
	st, errText := g.run(t, w, res.RunID)
	require.Equal(t, rewardmodels.RunSucceeded, st.Status, errText)
	reqs := g.task.Requests()
	require.NotEmpty(t, reqs)
	for _, r := range reqs {
		require.Equal(t, "Bearer "+key, r.Header.Get("Authorization"), "the tenant's key wins over the allow-list's")
	}
	for _, r := range g.refl.Requests() {
		require.NotContains(t, r.Header.Get("Authorization"), key)
	}
	_, evs := g.stream(t, res.RunID)
	for _, e := range evs {
		require.NotContains(t, string(e.Payload), key, e.Type)
	}
	require.Contains(t, string(evs[0].Payload), `"task_api_key_sealed": "v1:`)

	// A key without a base to send it to is refused, naming the field.
	_, err = g.api.cmds.RequestGepaRun.Handle(context.Background(), commands.RequestGepaRun{Actor: g.api.owner, Input: commands.RequestGepa{ModelID: g.modelID, TaskAPIKey: &key}})
	require.ErrorContains(t, err, "task_api_key")
}
