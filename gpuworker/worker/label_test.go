package worker

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/traces"
	"github.com/criticml/critic/gpuworker/label/labeltest"
	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/platform/llm"
	"github.com/criticml/critic/platform/llm/llmtest"
)

// traceEvents returns a trace's events of one type, in order.
func (s *service) traceEvents(t *testing.T, traceID, typ string) []events.Envelope {
	t.Helper()
	loaded, err := s.store.LoadStreams(context.Background(), []string{events.TraceStream(traceID)})
	require.NoError(t, err)
	var out []events.Envelope
	for _, e := range loaded[events.TraceStream(traceID)] {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

func (s *service) traceState(t *testing.T, traceID string) traces.State {
	t.Helper()
	loaded, err := s.store.LoadStreams(context.Background(), []string{events.TraceStream(traceID)})
	require.NoError(t, err)
	var st traces.State
	for _, e := range loaded[events.TraceStream(traceID)] {
		st.Apply(e)
	}
	return st
}

// TestLabelJobRecordsLabelsAndLabelsOnlyNewChunks drives label jobs through
// the real worker service: the first job labels every chunk (one call per
// chunk) and records them as trace.steps_labeled for revision 1; after a
// session sync that adds one chunk, the new revision's job makes exactly
// one model call; a stale or duplicate job makes none.
func TestLabelJobRecordsLabelsAndLabelsOnlyNewChunks(t *testing.T) {
	t.Parallel()
	blobs, err := blob.NewLocal(t.TempDir())
	require.NoError(t, err)
	api := newService(t, blobs)
	srv := llmtest.New(t)
	srv.Handle(func(r llmtest.Request) llmtest.Reply { return labeltest.Reply(r).WithUsage(50, 10) })
	c := llm.New(llm.Model{Provider: llm.ProviderOpenAI, Name: "labeler", APIBase: srv.URL}, llm.Options{MaxRetries: llm.NoRetries})
	w, err := New(Config{Client: api.client("w-label"), Blobs: blobs, DataDir: t.TempDir(), Log: testLogger(t), StepLabel: NewLabeler(c)})
	require.NoError(t, err)
	ctx := context.Background()
	tr := api.traces[0]
	job := func(rev int) []byte {
		return mustJSON(t, jobs.LabelJob{TraceID: tr, Revision: rev, OwnerID: api.owner.UserID})
	}

	require.True(t, w.Handle(jobs.TopicLabel)(ctx, job(1)))
	require.Equal(t, 3, srv.Calls(), "user message, tool call with its result, answer")
	labeled := api.traceEvents(t, tr, events.TraceStepsLabeled)
	require.Len(t, labeled, 1)
	var p events.TraceStepsLabeledV1
	require.NoError(t, labeled[0].Decode(&p))
	require.Equal(t, 1, p.Revision)
	require.Equal(t, "openai/labeler", p.Model)
	require.Len(t, p.Labels, 3)
	require.Equal(t, 150, p.InputTokens)
	require.Equal(t, "worker:w-label", labeled[0].Actor)

	// A duplicate delivery: nothing left to label, no call.
	require.True(t, w.Handle(jobs.TopicLabel)(ctx, job(1)))
	require.Equal(t, 3, srv.Calls())

	// The session grows by one user message (a re-import of the same id).
	_, err = api.cmds.ImportTraces.Handle(ctx, commands.ImportTraces{Actor: api.owner, Input: commands.ImportTracesInput{Format: "stash", Data: []byte(`{"id":"t0","steps":[` +
		`{"role":"user","content":"hi 0"},{"role":"assistant","content":"","tool_name":"lookup","tool_input":{"q":"0"},"tool_call_id":"c0"},` +
		`{"role":"tool","content":"0","tool_name":"lookup","tool_call_id":"c0"},{"role":"assistant","content":"the answer is right 0"},` +
		`{"role":"user","content":"and tomorrow?"}]}`)}})
	require.NoError(t, err)
	require.Equal(t, 2, api.traceState(t, tr).Revision)
	require.True(t, w.Handle(jobs.TopicLabel)(ctx, job(1)), "a stale job")
	require.Equal(t, 3, srv.Calls(), "a job for an old revision calls no model")
	require.True(t, w.Handle(jobs.TopicLabel)(ctx, job(2)))
	require.Equal(t, 4, srv.Calls(), "re-labeling a trace grown by one chunk makes exactly one model call")
	labeled = api.traceEvents(t, tr, events.TraceStepsLabeled)
	require.Len(t, labeled, 2)
	require.NoError(t, labeled[1].Decode(&p))
	require.Equal(t, 2, p.Revision)
	require.Len(t, p.Labels, 1)
	require.Equal(t, "user", string(p.Labels[0].Actor))
	require.Len(t, api.traceState(t, tr).Labeled, 4)
}

// TestLabelFailureIsRecordedAndRetryable: a model that keeps failing leaves
// the trace with trace.labeling_failed naming the model and the error; the
// labels that did work are recorded; the source still asks for the rest.
func TestLabelFailureIsRecordedAndRetryable(t *testing.T) {
	t.Parallel()
	blobs, err := blob.NewLocal(t.TempDir())
	require.NoError(t, err)
	api := newService(t, blobs)
	srv := llmtest.New(t)
	srv.Handle(func(r llmtest.Request) llmtest.Reply {
		if _, actor := labeltest.Target(r); actor == "user" {
			return llmtest.Status(400)
		}
		return labeltest.Reply(r)
	})
	c := llm.New(llm.Model{Provider: llm.ProviderOpenAI, Name: "labeler", APIBase: srv.URL}, llm.Options{MaxRetries: llm.NoRetries})
	w, err := New(Config{Client: api.client("w-label"), Blobs: blobs, DataDir: t.TempDir(), Log: testLogger(t), StepLabel: NewLabeler(c)})
	require.NoError(t, err)
	ctx := context.Background()
	tr := api.traces[1]
	require.True(t, w.Handle(jobs.TopicLabel)(ctx, mustJSON(t, jobs.LabelJob{TraceID: tr, Revision: 1, OwnerID: api.owner.UserID})))

	failed := api.traceEvents(t, tr, events.TraceLabelingFailed)
	require.Len(t, failed, 1)
	var f events.TraceLabelingFailedV1
	require.NoError(t, failed[0].Decode(&f))
	require.Equal(t, 1, f.Failed)
	require.Equal(t, "openai/labeler", f.Model)
	require.Contains(t, f.Error, "1 of 3 chunks could not be labeled")
	require.Contains(t, f.Error, "HTTP 400")
	require.Len(t, api.traceEvents(t, tr, events.TraceStepsLabeled), 1, "the two good labels are kept")

	src, err := api.cmds.Streams.LabelSourceOf(ctx, tr, 1)
	require.NoError(t, err)
	require.True(t, src.Needed, "the failed chunk is still to label")
	require.Len(t, src.Labeled, 2)
	st := api.traceState(t, tr)
	require.Equal(t, 1, st.LabelingFailed)

	// Without a step-label model the retry says what to set.
	_, err = api.cmds.RetryLabeling.Handle(ctx, commands.RetryLabeling{Actor: api.owner, TraceID: tr})
	require.ErrorContains(t, err, "CRITIC_STEP_LABEL_MODEL")
	cmds := commands.New(api.store, commands.WithStepLabelModel("openai/labeler", ""))
	_, err = cmds.RetryLabeling.Handle(ctx, commands.RetryLabeling{Actor: commands.Actor{UserID: "someone-else"}, TraceID: tr})
	require.ErrorContains(t, err, "not found", "another owner's trace")
	_, err = cmds.RetryLabeling.Handle(ctx, commands.RetryLabeling{Actor: api.owner, TraceID: tr})
	require.NoError(t, err)
	require.Len(t, api.traceEvents(t, tr, events.TraceLabelingRequested), 1)
	require.Zero(t, api.traceState(t, tr).LabelingFailed, "the retry clears the failure")

	// The retried job labels only the missing chunk.
	srv.Handle(labeltest.Reply)
	calls := srv.Calls()
	require.True(t, w.Handle(jobs.TopicLabel)(ctx, mustJSON(t, jobs.LabelJob{TraceID: tr, Revision: 1, OwnerID: api.owner.UserID})))
	require.Equal(t, calls+1, srv.Calls())
	src, err = api.cmds.Streams.LabelSourceOf(ctx, tr, 1)
	require.NoError(t, err)
	require.False(t, src.Needed)
	_, err = cmds.RetryLabeling.Handle(ctx, commands.RetryLabeling{Actor: api.owner, TraceID: tr})
	require.ErrorContains(t, err, "every complete chunk of the trace has a label already")
}
