package sections

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/labels"
)

func ids(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("s%d", i)
	}
	return out
}

func u(c string) domain.Step { return domain.Step{Role: domain.RoleUser, Content: c} }
func a(c string) domain.Step { return domain.Step{Role: domain.RoleAssistant, Content: c} }
func call(name string, in map[string]any) domain.Step {
	return domain.Step{Role: domain.RoleAssistant, ToolName: name, ToolInput: in}
}
func res(c string) domain.Step { return domain.Step{Role: domain.RoleTool, Content: c} }

func ranges(ss []Section) [][2]int {
	out := make([][2]int, len(ss))
	for i, s := range ss {
		out[i] = [2]int{s.FirstIndex, s.LastIndex}
	}
	return out
}

func TestRequestsAndContext(t *testing.T) {
	t.Parallel()
	steps := []domain.Step{
		{Role: domain.RoleSystem, Content: "You are helpful"},
		u("Fix the login bug\nin auth.go"), a("On it."),
		u("also add a test"), u("in auth_test.go"), call("Read", map[string]any{"file_path": "a.go"}), res("..."),
		u("thanks!"),
	}
	got := Build(steps, ids(len(steps)), labels.Labeling{})
	require.Equal(t, [][2]int{{0, 2}, {3, 6}, {7, 7}}, ranges(got), "leading system stays with the first request; consecutive user messages stay together")
	require.Equal(t, "Fix the login bug", got[0].Title)
	require.Equal(t, TitleRequest, got[0].TitleSource)
	require.Equal(t, "s0", got[0].FirstStepID)
	require.Equal(t, "s2", got[0].LastStepID)
	require.Equal(t, KindTask, got[1].Kind)
	require.True(t, got[1].Graded)
	require.Equal(t, KindContext, got[2].Kind, "a section without assistant responses or tool calls is context")
	require.False(t, got[2].Graded)
	require.Empty(t, Build(nil, nil, labels.Labeling{}))
	long := Build([]domain.Step{u(strings.Repeat("word ", 40)), a("ok")}, ids(2), labels.Labeling{})
	require.Equal(t, MaxTitle, len([]rune(long[0].Title)))
	require.True(t, strings.HasSuffix(long[0].Title, "…"))
}

func TestTaskLabelsWin(t *testing.T) {
	t.Parallel()
	steps := []domain.Step{u("book a flight"), a("where to?"), u("Paris"), a("booked"), u("now a hotel"), a("booked too"), u("thanks")}
	lab := labels.Labeling{Chunks: labels.Chunks(steps)}
	tasks := []string{"flight", "flight", "flight", "flight", "hotel", "hotel", "hotel"}
	for i := range lab.Chunks {
		lab.Labels = append(lab.Labels, &labels.Label{ChunkID: lab.Chunks[i].ID, TaskID: tasks[i]})
	}
	got := Build(steps, ids(len(steps)), lab)
	require.Equal(t, [][2]int{{0, 3}, {4, 6}}, ranges(got), "the answer to the agent's question stays in its task")
	require.Equal(t, "flight", *got[0].TaskID)
	require.Equal(t, "book a flight", got[0].Title)
	// Without labels the same trace splits at every request.
	require.Len(t, Build(steps, ids(len(steps)), labels.Labeling{}), 4)
}

func todo(items ...string) domain.Step {
	var todos []any
	for i, it := range items {
		st := "pending"
		if strings.HasPrefix(it, "*") {
			st, it = "in_progress", it[1:]
		} else if i == 0 {
			st = "completed"
		}
		todos = append(todos, map[string]any{"content": it, "status": st})
	}
	return call("TodoWrite", map[string]any{"todos": todos})
}

func TestProgressSubtasksAndPhases(t *testing.T) {
	t.Parallel()
	steps := []domain.Step{
		u("add rate limiting"), a("Let me plan."), // 0-1
		todo("*Read the middleware", "Write the limiter"), res("ok"), // 2-3
		call("Read", map[string]any{"file_path": "mw.go"}), res("package mw"), // 4-5
		call("Grep", map[string]any{"pattern": "Handler"}), res("mw.go:3"), // 6-7
		todo("Read the middleware", "*Write the limiter"), res("ok"), // 8-9
		call("Edit", map[string]any{"file_path": "mw.go"}), res("ok"), // 10-11
		call("Bash", map[string]any{"command": "go test ./..."}), res("ok"), // 12-13
		call("Bash", map[string]any{"command": "git commit -am limiter"}), res("ok"), // 14-15
		a("Done."), // 16
	}
	got := Build(steps, ids(len(steps)), labels.Labeling{})
	require.Len(t, got, 1)
	subs := got[0].Children
	require.Equal(t, [][2]int{{0, 1}, {2, 7}, {8, 16}}, ranges(subs))
	require.Equal(t, "add rate limiting", subs[0].Title)
	require.Equal(t, "Read the middleware", subs[1].Title)
	require.Equal(t, TitleProgress, subs[1].TitleSource)
	require.Equal(t, KindSubtask, subs[2].Kind)
	require.Empty(t, subs[1].Children, "only inspecting: no phases")
	ph := subs[2].Children
	require.Equal(t, [][2]int{{8, 11}, {12, 13}, {14, 16}}, ranges(ph))
	require.Equal(t, []string{"Editing", "Verifying", "Publishing"}, []string{ph[0].Title, ph[1].Title, ph[2].Title})
	require.Equal(t, ActivityEdit, *ph[0].Activity)
	require.Equal(t, KindPhase, ph[1].Kind)
}

func TestActivities(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		step domain.Step
		want string
	}{
		{call("Read", nil), ActivityInspect},
		{call("str_replace_editor", map[string]any{"command": "str_replace"}), ActivityEdit},
		{call("exec_command", map[string]any{"cmd": []any{"bash", "-lc", "pytest -q"}}), ActivityVerify},
		{call("shell", map[string]any{"command": "rg TODO"}), ActivityInspect},
		{call("Bash", map[string]any{"command": "git push origin main"}), ActivityPublish},
		{call("mcp__github__create_pull_request", nil), ActivityPublish},
		{call("browser_navigate", map[string]any{"url": "https://Shop.example.com/cart"}), "browse:shop.example.com"},
		{call("WebFetch", map[string]any{"url": "https://docs.example.org/x"}), "browse:docs.example.org"},
		{call("lookup_order", nil), ActivityInspect},
		{call("frobnicate", nil), ""},
		{a("just text"), ""},
		{todo("*x"), ""},
	} {
		require.Equal(t, c.want, Activity(c.step), "%s %v", c.step.ToolName, c.step.ToolInput)
	}
	// Moving between sites is a change of work.
	steps := []domain.Step{u("compare prices"),
		call("browser_navigate", map[string]any{"url": "https://a.example/p"}), res("..."),
		call("browser_navigate", map[string]any{"url": "https://a.example/q"}), res("..."),
		call("browser_navigate", map[string]any{"url": "https://b.example/p"}), res("..."), a("b is cheaper")}
	got := Build(steps, ids(len(steps)), labels.Labeling{})
	require.Equal(t, [][2]int{{0, 4}, {5, 7}}, ranges(got[0].Children))
	require.Equal(t, "Browsing b.example", got[0].Children[1].Title)
}

func TestCompletionEvidence(t *testing.T) {
	t.Parallel()
	var steps []domain.Step
	steps = append(steps, domain.Step{Role: domain.RoleSystem, Content: "sys"})
	for i := range 10 {
		steps = append(steps, u(fmt.Sprint("req ", i)), a("ack"))
		for j := range 30 {
			steps = append(steps, call("Read", map[string]any{"n": j}), res("x"))
		}
	}
	got := CompletionEvidence(steps)
	require.Len(t, got, MaxCompletionEvents)
	in := map[int]bool{}
	for k, i := range got {
		in[i] = true
		if k > 0 {
			require.Greater(t, i, got[k-1], "in trace order")
		}
	}
	for i, s := range steps {
		if s.Role == domain.RoleUser || (s.Role == domain.RoleAssistant && !s.IsToolCall()) {
			require.True(t, in[i], "requests and assistant messages are kept (step %d)", i)
		}
	}
	require.False(t, in[0], "system steps are not events")
	require.True(t, in[len(steps)-1], "evenly spaced tool evidence reaches the end")
	small := []domain.Step{u("q"), a("a")}
	require.Equal(t, []int{0, 1}, CompletionEvidence(small))

	pre, inside := SectionEvidence(steps, 200, 210)
	require.Len(t, pre, PrecedingEvents)
	require.Equal(t, 199, pre[len(pre)-1])
	require.Equal(t, 11, len(inside))
	_, inside = SectionEvidence(steps, 1, len(steps)-1)
	require.Len(t, inside, MaxSectionEvents)
	h1 := EvidenceHash(CompletionVersion, steps, ids(len(steps)), got)
	require.Equal(t, h1, EvidenceHash(CompletionVersion, steps, ids(len(steps)), got), "same evidence, same key")
	steps[got[5]].Content += "!"
	require.NotEqual(t, h1, EvidenceHash(CompletionVersion, steps, ids(len(steps)), got), "changed evidence invalidates")
	require.NotEqual(t, h1, EvidenceHash(SectionAssessmentVersion, steps, ids(len(steps)), got))
}

func TestResolveRanges(t *testing.T) {
	t.Parallel()
	id := ids(5)
	r, err := ResolveRanges(id, []Range{{"s1", "s3"}, {"s4", "s4"}})
	require.NoError(t, err)
	require.Equal(t, 1, r[0].First)
	require.Equal(t, 3, r[0].Last)
	for name, c := range map[string]struct {
		rs    []Range
		field string
	}{
		"none":     {nil, "ranges"},
		"five":     {[]Range{{"s0", "s0"}, {"s0", "s0"}, {"s0", "s0"}, {"s0", "s0"}, {"s0", "s0"}}, "ranges"},
		"foreign":  {[]Range{{"s0", "s1"}, {"x", "s1"}}, "ranges[1].first_step_id"},
		"bad last": {[]Range{{"s0", "nope"}}, "ranges[0].last_step_id"},
		"reversed": {[]Range{{"s3", "s1"}}, "ranges[0]"},
	} {
		_, err := ResolveRanges(id, c.rs)
		var v *domain.ValidationError
		require.ErrorAs(t, err, &v, name)
		require.Equal(t, c.field, v.Field, name)
	}
}

//go:fix inline
func f(x float64) *float64 { return new(x) }

func TestValidateOutputs(t *testing.T) {
	t.Parallel()
	req := []Resolved{{Range: Range{"s0", "s2"}}, {Range: Range{"s3", "s4"}}}
	ok := []Summary{{FirstStepID: "s0", LastStepID: "s2", Score: new(0.7), Reason: new("did it")}, {FirstStepID: "s3", LastStepID: "s4", Reason: new("no evidence")}}
	require.NoError(t, ValidateSummaries(req, ok))
	require.Error(t, ValidateSummaries(req, ok[:1]))
	swapped := []Summary{ok[1], ok[0]}
	require.ErrorContains(t, ValidateSummaries(req, swapped), "not the requested")
	bad := append([]Summary{}, ok...)
	bad[0].Score = new(1.2)
	require.ErrorContains(t, ValidateSummaries(req, bad), "outside 0–1")
	bad[0].Score, bad[0].Reason = new(0.5), nil
	require.ErrorContains(t, ValidateSummaries(req, bad), "no reason")

	steps := []domain.Step{u("do x"), a("working"), call("Read", nil), res("r"), a("done"), u("now y"), a("y done")}
	id := ids(len(steps))
	good := []CompletionTask{
		{FirstStepID: "s0", LastStepID: "s4", Checkpoints: []Checkpoint{{"s0", f(0), "asked"}, {"s2", new(0.5), "found"}, {"s3", new(0.3), "regressed"}, {"s4", nil, "unclear"}}},
		{FirstStepID: "s5", LastStepID: "s6", Checkpoints: []Checkpoint{{"s6", new(0.9), "mostly"}}},
	}
	require.NoError(t, ValidateCompletion(steps, id, good))
	require.True(t, Gradable(steps, 0, 1))
	require.False(t, Gradable(steps, 5, 5), "a lone user message is context")
	for name, tasks := range map[string][]CompletionTask{
		"out of range":      {{FirstStepID: "s0", LastStepID: "s2", Checkpoints: []Checkpoint{{"s4", f(1), ""}}}},
		"unordered":         {{FirstStepID: "s0", LastStepID: "s4", Checkpoints: []Checkpoint{{"s2", new(0.1), ""}, {"s1", new(0.2), ""}}}},
		"above one":         {{FirstStepID: "s0", LastStepID: "s4", Checkpoints: []Checkpoint{{"s2", new(1.5), ""}}}},
		"request progress":  {{FirstStepID: "s0", LastStepID: "s4", Checkpoints: []Checkpoint{{"s0", new(0.4), ""}}}},
		"overlapping tasks": {{FirstStepID: "s0", LastStepID: "s4"}, {FirstStepID: "s4", LastStepID: "s6"}},
		"unknown step":      {{FirstStepID: "zz", LastStepID: "s4"}},
	} {
		require.Error(t, ValidateCompletion(steps, id, tasks), name)
	}
}
