package worker

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/platform/llm/llmtest"
)

// gepaWorld is a succeeded reward model on the service's five traces, and
// scripted task and reflection models.
type gepaWorld struct {
	*setup
	w          *Worker
	modelID    string
	task, refl *llmtest.Server
}

func newGepaWorld(t *testing.T) *gepaWorld {
	s := newSetup(t)
	g := &gepaWorld{setup: s, task: llmtest.New(t), refl: llmtest.New(t)}
	cfg := s.config(t, "w-gepa")
	cfg.Getenv = func(k string) string {
		if k == "OPENAI_BASE_URL" {
			return g.refl.URL
		}
		return ""
	}
	var err error
	g.w, err = New(cfg)
	require.NoError(t, err)
	id, _ := s.api.queueTraining(t, s.base)
	require.True(t, g.w.HandleTrain(context.Background(), mustJSON(t, s.api.trainMessage(id))))
	require.Equal(t, rewardmodels.StatusSucceeded, s.api.status(t, id).Status)
	g.modelID = id
	g.task.Handle(func(r llmtest.Request) llmtest.Reply {
		if strings.Contains(r.Messages[0].Content, "lookup") {
			return llmtest.Reply{Content: "the answer is right"}
		}
		return llmtest.Reply{Content: "no"}
	})
	g.refl.Handle(func(r llmtest.Request) llmtest.Reply {
		p := r.Last()
		if strings.Contains(p, "You are naming a skill") {
			return llmtest.Reply{Content: "<name>greeting</name><description>Use when a user says hi.</description>"}
		}
		return llmtest.Reply{Content: "<new_skill_body>\nCall lookup before answering. Variant " + time.Now().Format("150405.000000000") + "\n</new_skill_body>"}
	})
	return g
}

func (g *gepaWorld) request(t *testing.T, budget int) string {
	task, refl, base := "openai/task", "openai/reflection", g.task.URL
	res, err := g.api.cmds.RequestGepaRun(context.Background(), g.api.owner, commands.RequestGepa{ModelID: g.modelID,
		TaskModel: &task, TaskAPIBase: &base, ReflectionModel: &refl, MaxMetricCalls: &budget})
	require.NoError(t, err)
	return res.RunID
}

func (g *gepaWorld) stream(t *testing.T, runID string) (rewardmodels.GepaState, []events.Envelope) {
	loaded, err := g.api.store.LoadStreams(context.Background(), []string{events.GepaRunStream(runID)})
	require.NoError(t, err)
	var st rewardmodels.GepaState
	for _, e := range loaded[events.GepaRunStream(runID)] {
		st.Apply(e)
	}
	return st, loaded[events.GepaRunStream(runID)]
}

// A GEPA job through the real worker service: claimed, its examples built
// from the model's traces, every evaluated candidate recorded as an event,
// the result stored within budget; a duplicate delivery is refused.
func TestGepaJobSucceedsThroughTheWorkerService(t *testing.T) {
	g := newGepaWorld(t)
	runID := g.request(t, 14)
	st, _ := g.stream(t, runID)
	require.Equal(t, rewardmodels.RunQueued, st.Status)
	require.Equal(t, 5, st.Requested.Examples, "every trace has a user message before its first assistant step")
	raw, err := g.blobs.Get(context.Background(), jobs.GepaExamplesKey(g.api.owner.UserID, runID))
	require.NoError(t, err)
	require.Contains(t, string(raw), `"messages":[{"role":"user","content":"hi 0"}]`)
	require.Contains(t, string(raw), `"system":null`)

	msg := mustJSON(t, jobs.GepaJob{RunID: runID, OwnerID: g.api.owner.UserID})
	require.True(t, g.w.HandleGepa(context.Background(), msg))
	succ := g.api.requests("/gepa/" + runID + "/succeeded")
	require.Len(t, succ, 1)
	require.Equal(t, http.StatusOK, succ[0].Status, string(succ[0].Raw))
	st, evs := g.stream(t, runID)
	require.Equal(t, rewardmodels.RunSucceeded, st.Status)
	var res commands.GepaResult
	var cands int
	for _, e := range evs {
		switch e.Type {
		case events.GepaRunSucceeded:
			var p events.GepaRunSucceededV1
			require.NoError(t, e.Decode(&p))
			require.NoError(t, json.Unmarshal(p.Result, &res))
		case events.GepaRunCandidateEvaluated:
			cands++
		}
	}
	require.Positive(t, cands)
	require.Equal(t, "greeting", res.SkillName)
	require.LessOrEqual(t, res.MetricCalls, 14)
	require.Equal(t, res.MetricCalls, g.task.Calls())
	require.True(t, strings.HasPrefix(res.BestSkill, "---\nname: greeting\ndescription: Use when a user says hi.\n---\n\n"))

	require.True(t, g.w.HandleGepa(context.Background(), msg), "a duplicate is acknowledged")
	require.Equal(t, http.StatusConflict, g.api.requests("/gepa/" + runID + "/claim")[1].Status)
	require.Len(t, g.api.requests("/gepa/"+runID+"/succeeded"), 1)
}

// A failing run reports the end of its log as the run's error.
func TestGepaJobFailureReportsLogTail(t *testing.T) {
	g := newGepaWorld(t)
	g.refl.Handle(func(llmtest.Request) llmtest.Reply { return llmtest.Reply{Status: 401, Message: "bad key"} })
	runID := g.request(t, 14)
	require.True(t, g.w.HandleGepa(context.Background(), mustJSON(t, jobs.GepaJob{RunID: runID})))
	st, evs := g.stream(t, runID)
	require.Equal(t, rewardmodels.RunFailed, st.Status)
	var p events.GepaRunFailedV1
	require.NoError(t, evs[len(evs)-1].Decode(&p))
	require.Contains(t, p.Error, "claimed GEPA run")
	require.Contains(t, p.Error, "reflection model: openai/reflection")
	require.Contains(t, p.Error, "HTTP 401")
	require.LessOrEqual(t, len(p.Error), 2000)
}

// A worker that dies mid-run fails the run on lease expiry, with a reason.
func TestGepaLeaseExpiryFailsTheRun(t *testing.T) {
	g := newGepaWorld(t)
	runID := g.request(t, 14)
	_, err := g.api.client("w-dead").ClaimGepa(context.Background(), runID)
	require.NoError(t, err)
	res, err := g.api.cmds.ExpireGepaLease(context.Background(), runID, time.Now().Add(10*time.Second))
	require.NoError(t, err)
	require.Empty(t, res.LastEventID, "not before the lease ends")
	_, err = g.api.cmds.ExpireGepaLease(context.Background(), runID, time.Now().Add(time.Minute))
	require.NoError(t, err)
	st, evs := g.stream(t, runID)
	require.Equal(t, rewardmodels.RunFailed, st.Status)
	require.Contains(t, string(evs[len(evs)-1].Payload), "worker w-dead stopped reporting")
	// Its late report is refused.
	err = g.api.client("w-dead").GepaSucceeded(context.Background(), runID, json.RawMessage(`{}`))
	require.ErrorIs(t, err, ErrNotClaimable)
}
