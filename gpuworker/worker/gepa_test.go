package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/criticml/critic/domain/jobs/lease"

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
	cfg.Getenv = g.env
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

// env is the workers' environment: the reflection model is the operator's
// OpenAI base, and the task server (a tenant-named base on loopback) is
// allowed by the operator, without a key.
func (g *gepaWorld) env(k string) string {
	switch k {
	case "OPENAI_BASE_URL":
		return g.refl.URL
	case "CRITIC_ALLOWED_API_BASES":
		return g.task.URL
	}
	return ""
}

func (g *gepaWorld) request(t *testing.T, budget int) string {
	task, refl, base := "openai/task", "openai/reflection", g.task.URL
	res, err := g.api.cmds.RequestGepaRun.Handle(context.Background(), commands.RequestGepaRun{Actor: g.api.owner, Input: commands.RequestGepa{ModelID: g.modelID,
		TaskModel: &task, TaskAPIBase: &base, ReflectionModel: &refl, MaxMetricCalls: &budget}})
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
	require.True(t, g.w.Handle(jobs.TopicGepa)(context.Background(), msg))
	succ := g.api.requests("/jobs/gepa/" + runID + "/finish")
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

	require.True(t, g.w.Handle(jobs.TopicGepa)(context.Background(), msg), "a duplicate is acknowledged")
	require.Equal(t, http.StatusConflict, g.api.requests("/jobs/gepa/" + runID + "/claim")[1].Status)
	require.Len(t, g.api.requests("/jobs/gepa/"+runID+"/finish"), 1)
}

// A failing run reports the end of its log as the run's error.
func TestGepaJobFailureReportsLogTail(t *testing.T) {
	g := newGepaWorld(t)
	g.refl.Handle(func(llmtest.Request) llmtest.Reply { return llmtest.Reply{Status: 401, Message: "bad key"} })
	runID := g.request(t, 14)
	require.True(t, g.w.Handle(jobs.TopicGepa)(context.Background(), mustJSON(t, jobs.GepaJob{RunID: runID})))
	st, evs := g.stream(t, runID)
	require.Equal(t, rewardmodels.RunFailed, st.Status)
	var p events.GepaRunFailedV1
	require.NoError(t, evs[len(evs)-1].Decode(&p))
	require.Contains(t, p.Error, "claimed GEPA run")
	require.Contains(t, p.Error, "reflection model: openai/reflection")
	require.Contains(t, p.Error, "HTTP 401")
	require.LessOrEqual(t, len(p.Error), 2000)
}

// A worker that dies mid-run loses the run on lease expiry: it goes back to
// the queue twice (another worker may take it; the dead one's late report
// is refused), and the third lost run fails it with a readable reason.
func TestGepaLeaseExpiryRequeuesThenFails(t *testing.T) {
	g := newGepaWorld(t)
	runID := g.request(t, 14)
	for run := 1; run <= lease.MaxLostRuns; run++ {
		dead := fmt.Sprintf("w-dead-%d", run)
		_, err := g.api.client(dead).ClaimGepa(context.Background(), runID)
		require.NoError(t, err, "run %d", run)
		res, err := g.api.cmds.ExpireGepaLease.Handle(context.Background(), commands.ExpireGepaLease{RunID: runID, Now: time.Now().Add(10 * time.Second)})
		require.NoError(t, err)
		require.Empty(t, res.LastEventID, "not before the lease ends")
		_, err = g.api.cmds.ExpireGepaLease.Handle(context.Background(), commands.ExpireGepaLease{RunID: runID, Now: time.Now().Add(time.Minute)})
		require.NoError(t, err)
		// Its late report is refused.
		err = g.api.client(dead).GepaSucceeded(context.Background(), runID, json.RawMessage(`{}`))
		require.ErrorIs(t, err, ErrNotClaimable)
		st, evs := g.stream(t, runID)
		last := evs[len(evs)-1]
		if run < lease.MaxLostRuns {
			require.Equal(t, rewardmodels.RunQueued, st.Status)
			require.Equal(t, events.GepaRunRequeued, last.Type)
			var p events.GepaRunRequeuedV1
			require.NoError(t, last.Decode(&p))
			require.Equal(t, events.GepaRunRequeuedV1{RunID: runID, WorkerID: dead, Reason: events.RequeueLeaseExpired, Detail: p.Detail, LostRuns: run}, p)
			require.Contains(t, p.Detail, "worker "+dead+" stopped reporting")
			continue
		}
		require.Equal(t, rewardmodels.RunFailed, st.Status)
		var p events.GepaRunFailedV1
		require.NoError(t, last.Decode(&p))
		lines := strings.Split(p.Error, "\n")
		require.Equal(t, "GEPA run failed: the worker was lost 3 times (lease expired each time); start a new run once the workers are healthy", lines[0])
		require.Len(t, lines, 4)
		for i, l := range lines[1:] {
			require.True(t, strings.HasPrefix(l, fmt.Sprintf("run %d: worker w-dead-%d stopped reporting", i+1, i+1)), l)
		}
	}
}

// A worker that stops (SIGTERM: its context ends) mid-run hands the run
// back instead of failing it: the run is queued again, and the next worker
// runs it to the end.
func TestShutdownMidGepaHandsTheRunBack(t *testing.T) {
	g := newGepaWorld(t)
	runID := g.request(t, 14)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var once sync.Once
	g.task.Handle(func(r llmtest.Request) llmtest.Reply {
		once.Do(stop) // the worker is told to stop while the search runs
		return llmtest.Reply{Content: "no"}
	})
	msg := mustJSON(t, jobs.GepaJob{RunID: runID, OwnerID: g.api.owner.UserID})
	require.False(t, g.w.Handle(jobs.TopicGepa)(ctx, msg), "an interrupted job is not acknowledged")
	hb := g.api.requests("/jobs/gepa/" + runID + "/handback")
	require.Len(t, hb, 1)
	require.Equal(t, http.StatusOK, hb[0].Status, string(hb[0].Raw))
	require.Empty(t, g.api.requests("/jobs/gepa/"+runID+"/fail"))
	st, evs := g.stream(t, runID)
	require.Equal(t, rewardmodels.RunQueued, st.Status)
	var p events.GepaRunRequeuedV1
	require.Equal(t, events.GepaRunRequeued, evs[len(evs)-1].Type)
	require.NoError(t, evs[len(evs)-1].Decode(&p))
	require.Equal(t, events.GepaRunRequeuedV1{RunID: runID, WorkerID: "w-gepa", Reason: events.RequeueHandedBack,
		Detail: "worker w-gepa is shutting down"}, p)

	// The next worker takes it from the start and finishes it.
	g.task.Handle(func(r llmtest.Request) llmtest.Reply { return llmtest.Reply{Content: "the answer is right"} })
	cfg := g.config(t, "w-next")
	cfg.DataDir = t.TempDir()
	cfg.Getenv = g.env
	next, err := New(cfg)
	require.NoError(t, err)
	require.True(t, next.Handle(jobs.TopicGepa)(context.Background(), msg))
	st, _ = g.stream(t, runID)
	require.Equal(t, rewardmodels.RunSucceeded, st.Status)
	require.Equal(t, "w-next", st.WorkerID)
}
