package worker

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/assessment"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/stepscores"
	"github.com/criticml/critic/domain/traces"
	"github.com/criticml/critic/gpuworker/grade/gradetest"
	"github.com/criticml/critic/gpuworker/label/labeltest"
	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/platform/llm"
	"github.com/criticml/critic/platform/llm/llmtest"
)

// TestLabelJobRunsQualityChecks drives a label job on a worker with a
// grading model through the real worker service: after the labels, each
// open step (the tool call, the answer nobody reacted to) is asked its one
// question, the answers are recorded as trace.steps_quality_checked for the
// revision, and the step scores blend them; a duplicate job and a grown
// trace whose open steps are all checked make no grading call.
func TestLabelJobRunsQualityChecks(t *testing.T) {
	t.Parallel()
	blobs, err := blob.NewLocal(t.TempDir())
	require.NoError(t, err)
	api := newService(t, blobs)
	srv := llmtest.New(t)
	var grades atomic.Int32
	srv.Handle(func(r llmtest.Request) llmtest.Reply {
		if id, _ := gradetest.Target(r); id != "" {
			grades.Add(1)
			return gradetest.Reply(r).WithUsage(30, 5)
		}
		return labeltest.Reply(r)
	})
	labeler := llm.New(llm.Model{Provider: llm.ProviderOpenAI, Name: "labeler", APIBase: srv.URL}, llm.Options{MaxRetries: llm.NoRetries, Concurrency: 1})
	grader := llm.New(llm.Model{Provider: llm.ProviderOpenAI, Name: "grader", APIBase: srv.URL}, llm.Options{MaxRetries: llm.NoRetries, Concurrency: 1})
	w, err := New(Config{Client: api.client("w-grade"), Blobs: blobs, DataDir: t.TempDir(), Log: testLogger(t),
		StepLabel: NewLabeler(labeler), Grader: NewGrader(grader)})
	require.NoError(t, err)
	ctx := context.Background()
	tr := api.traces[0]
	job := func(rev int) []byte {
		return mustJSON(t, jobs.LabelJob{TraceID: tr, Revision: rev, OwnerID: api.owner.UserID})
	}

	require.True(t, w.Handle(jobs.TopicLabel)(ctx, job(1)))
	require.Equal(t, 5, srv.Calls(), "three labels, two quality checks")
	require.Equal(t, int32(2), grades.Load())
	checked := api.traceEvents(t, tr, events.TraceStepsQualityChecked)
	require.Len(t, checked, 1)
	var p events.TraceStepsQualityCheckedV1
	require.NoError(t, checked[0].Decode(&p))
	require.Equal(t, 1, p.Revision)
	require.Equal(t, "openai/grader", p.Model)
	require.Equal(t, stepscores.CheckPolicy, p.Policy)
	require.Equal(t, 60, p.InputTokens)
	require.Equal(t, "worker:w-grade", checked[0].Actor)
	require.Len(t, p.Checks, 2)

	// The step scores blend them: the lookup −0.03 plus the work check's
	// 0.2×(−0.05)+0.1×(−0.1) = −0.02; the answer 0.6×0.45+0.3×0.1+0.1×(−0.25).
	st := api.traceState(t, tr)
	steps, ids := make([]domain.Step, len(st.Steps)), make([]string, len(st.Steps))
	for i, s := range st.Steps {
		steps[i], ids[i] = s.Step, s.ID
	}
	a := assessment.Of(steps, ids, st.Metadata, st.StepLabels, st.QualityChecks)
	require.Equal(t, stepscores.Policy+"+"+stepscores.CheckPolicy, a.StepScores.Policy)
	require.InDelta(t, -0.05, a.Rewards[1]["points"], 1e-9)
	require.InDelta(t, 0.275, a.Rewards[3]["points"], 1e-9)
	require.InDelta(t, 0.225, a.StepScores.Tasks[0].Score, 1e-9)
	require.NotNil(t, a.Rewards[3]["quality_check"])

	// A duplicate delivery asks nothing again.
	require.True(t, w.Handle(jobs.TopicLabel)(ctx, job(1)))
	require.Equal(t, 5, srv.Calls())

	// The trace grows by one user message: one label call, no new check
	// (the open steps are the same and already checked).
	_, err = api.cmds.ImportTraces.Handle(ctx, commands.ImportTraces{Actor: api.owner, Input: commands.ImportTracesInput{Format: "stash", Data: []byte(`{"id":"t0","steps":[` +
		`{"role":"user","content":"hi 0"},{"role":"assistant","content":"","tool_name":"lookup","tool_input":{"q":"0"},"tool_call_id":"c0"},` +
		`{"role":"tool","content":"0","tool_name":"lookup","tool_call_id":"c0"},{"role":"assistant","content":"the answer is right 0"},` +
		`{"role":"user","content":"and tomorrow?"}]}`)}})
	require.NoError(t, err)
	require.True(t, w.Handle(jobs.TopicLabel)(ctx, job(2)))
	require.Equal(t, 6, srv.Calls())
	require.Equal(t, int32(2), grades.Load())
}

// TestQualityChecksAreValidated: the worker service records only checks of
// open steps of the current revision, with the step's question and a
// distribution over its options; anything else is refused whole.
func TestQualityChecksAreValidated(t *testing.T) {
	t.Parallel()
	blobs, err := blob.NewLocal(t.TempDir())
	require.NoError(t, err)
	api := newService(t, blobs)
	srv := llmtest.New(t)
	srv.Handle(labeltest.Reply)
	c := llm.New(llm.Model{Provider: llm.ProviderOpenAI, Name: "labeler", APIBase: srv.URL}, llm.Options{MaxRetries: llm.NoRetries})
	w, err := New(Config{Client: api.client("w-label"), Blobs: blobs, DataDir: t.TempDir(), Log: testLogger(t), StepLabel: NewLabeler(c)})
	require.NoError(t, err)
	ctx := context.Background()
	tr := api.traces[2]
	require.True(t, w.Handle(jobs.TopicLabel)(ctx, mustJSON(t, jobs.LabelJob{TraceID: tr, Revision: 1, OwnerID: api.owner.UserID})))
	require.Empty(t, api.traceEvents(t, tr, events.TraceStepsQualityChecked), "no grading model: no checks, the rules alone")

	src, err := api.cmds.Streams.QualityCheckSourceOf(ctx, tr, 1)
	require.NoError(t, err)
	require.True(t, src.Needed)
	require.Len(t, src.Open, 2)
	var work, answer string
	for _, o := range src.Open {
		if o.Question.ID == stepscores.QuestionWork {
			work = o.ChunkID
		} else {
			answer = o.ChunkID
		}
	}
	require.NotEmpty(t, work)
	require.NotEmpty(t, answer)
	user := ""
	for _, l := range src.Labels {
		if l.Actor == "user" {
			user = l.ChunkID
		}
	}
	good := gradetest.Answers[stepscores.QuestionWork]
	record := func(rev int, cs ...stepscores.Check) error {
		_, err := api.cmds.RecordQualityChecks.Handle(ctx, commands.RecordQualityChecks{Actor: commands.WorkerActor("w"), Checks: traces.QualityChecksInput{TraceID: tr, Revision: rev,
			Model: "openai/grader", PromptVersion: "p", Checks: cs}})
		return err
	}
	var v *domain.ValidationError
	require.ErrorAs(t, record(1, stepscores.Check{ChunkID: user, Question: stepscores.QuestionWork, Probabilities: good}), &v, "a user step is not open")
	require.ErrorAs(t, record(1, stepscores.Check{ChunkID: answer, Question: stepscores.QuestionWork, Probabilities: good}), &v, "the wrong question")
	require.ErrorAs(t, record(1, stepscores.Check{ChunkID: work, Question: stepscores.QuestionWork,
		Probabilities: map[string]float64{"advanced": 0.9, "unneeded": 0.9, "misdirected": 0, "harmful": 0}}), &v, "not a distribution")
	require.ErrorAs(t, record(1, stepscores.Check{ChunkID: work, Question: stepscores.QuestionWork, Probabilities: good},
		stepscores.Check{ChunkID: work, Question: stepscores.QuestionWork, Probabilities: good}), &v, "twice")
	var conflict *domain.ConflictError
	require.True(t, errors.As(record(2, stepscores.Check{ChunkID: work, Question: stepscores.QuestionWork, Probabilities: good}), &conflict), "a stale revision")
	require.Empty(t, api.traceEvents(t, tr, events.TraceStepsQualityChecked), "nothing recorded from a refused report")

	require.NoError(t, record(1, stepscores.Check{ChunkID: work, Question: stepscores.QuestionWork, Probabilities: good}))
	src, err = api.cmds.Streams.QualityCheckSourceOf(ctx, tr, 1)
	require.NoError(t, err)
	require.Len(t, src.Open, 1, "the checked step is not asked again")
	require.Equal(t, answer, src.Open[0].ChunkID)
}

// TestFailedQualityChecksKeepTheRules: a grading model that fails leaves
// the labels recorded and no check (the steps keep the rules' points); the
// next label job of the trace asks again.
func TestFailedQualityChecksKeepTheRules(t *testing.T) {
	t.Parallel()
	blobs, err := blob.NewLocal(t.TempDir())
	require.NoError(t, err)
	api := newService(t, blobs)
	srv := llmtest.New(t)
	var down atomic.Bool
	down.Store(true)
	srv.Handle(func(r llmtest.Request) llmtest.Reply {
		if id, _ := gradetest.Target(r); id != "" {
			if down.Load() {
				return llmtest.Status(500)
			}
			return gradetest.Reply(r)
		}
		return labeltest.Reply(r)
	})
	mk := func(name string) *llm.Client {
		return llm.New(llm.Model{Provider: llm.ProviderOpenAI, Name: name, APIBase: srv.URL}, llm.Options{MaxRetries: llm.NoRetries})
	}
	w, err := New(Config{Client: api.client("w-grade"), Blobs: blobs, DataDir: t.TempDir(), Log: testLogger(t),
		StepLabel: NewLabeler(mk("labeler")), Grader: NewGrader(mk("grader"))})
	require.NoError(t, err)
	ctx := context.Background()
	tr := api.traces[1]
	job := mustJSON(t, jobs.LabelJob{TraceID: tr, Revision: 1, OwnerID: api.owner.UserID})
	require.True(t, w.Handle(jobs.TopicLabel)(ctx, job))
	require.Len(t, api.traceEvents(t, tr, events.TraceStepsLabeled), 1)
	require.Empty(t, api.traceEvents(t, tr, events.TraceStepsQualityChecked))
	require.Empty(t, api.traceEvents(t, tr, events.TraceLabelingFailed), "a failed check is not a labeling failure")

	down.Store(false)
	require.True(t, w.Handle(jobs.TopicLabel)(ctx, job), "a redelivered job asks the checks again")
	checked := api.traceEvents(t, tr, events.TraceStepsQualityChecked)
	require.Len(t, checked, 1)
	var p events.TraceStepsQualityCheckedV1
	require.NoError(t, checked[0].Decode(&p))
	require.Len(t, p.Checks, 2)
}
