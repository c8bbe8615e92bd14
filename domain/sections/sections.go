// Package sections groups a trace's steps into the sections every client
// shows (spec 001 "Trace sections"): a tree of tasks (requests, or the
// task_id of step labels, which wins), their recorded progress subtasks, and
// recognisable changes of work inside them (inspecting, editing, verifying,
// publishing, moving between sites). There are no count limits: a
// continuous run without a recognisable boundary stays one section and
// distinct tasks are never combined. Sections without an assistant response
// or tool call are context and are never graded. Computed here, once, so
// the web app, the API and the section assessments share one definition.
package sections

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/labels"
)

// The kinds of section.
const (
	KindTask    = "task"
	KindSubtask = "subtask"
	KindPhase   = "phase"
	KindContext = "context"
)

// Where a section's fallback title came from (generated titles from the
// section-summaries endpoint replace it in the client).
const (
	TitleRequest  = "request"
	TitleTask     = "task_label"
	TitleProgress = "progress"
	TitleActivity = "activity"
)

// Section is one node of the tree. Ranges are inclusive and in recorded
// step order; children partition their parent's range.
type Section struct {
	Kind        string    `json:"kind"`
	Title       string    `json:"title"`
	TitleSource string    `json:"title_source"`
	FirstStepID string    `json:"first_step_id"`
	LastStepID  string    `json:"last_step_id"`
	FirstIndex  int       `json:"first_step_index"`
	LastIndex   int       `json:"last_step_index"`
	TaskID      *string   `json:"task_id"`
	Activity    *string   `json:"activity"`
	Graded      bool      `json:"graded"`
	Children    []Section `json:"children"`
}

// MaxTitle bounds a fallback title (runes).
const MaxTitle = 80

// Build returns the section tree of a trace. ids are the steps' ids (same
// length as steps); lab is the trace's labeling (FromSteps or a labeler's),
// whose task ids, when any chunk has a label, define the tasks.
func Build(steps []domain.Step, ids []string, lab labels.Labeling) []Section {
	if len(steps) == 0 {
		return []Section{}
	}
	var tasks []Section
	if taskOf := labelTasks(len(steps), lab); taskOf != nil {
		start := 0
		for i := 1; i <= len(steps); i++ {
			if i == len(steps) || taskOf[i] != taskOf[start] {
				t := taskOf[start]
				s := newSection(steps, ids, KindTask, start, i-1)
				s.TaskID = &t
				if title := requestTitle(steps, start, i-1); title != "" {
					s.Title, s.TitleSource = title, TitleRequest
				} else {
					s.Title, s.TitleSource = "Task "+t, TitleTask
				}
				tasks = append(tasks, s)
				start = i
			}
		}
	} else {
		start, responded := 0, false
		for i := 0; i <= len(steps); i++ {
			if i == len(steps) || (steps[i].Role == domain.RoleUser && responded) {
				s := newSection(steps, ids, KindTask, start, i-1)
				s.Title, s.TitleSource = requestTitle(steps, start, i-1), TitleRequest
				if s.Title == "" {
					s.Title = "Steps " + strconv.Itoa(start+1) + "–" + strconv.Itoa(i)
				}
				tasks = append(tasks, s)
				start, responded = i, false
				continue
			}
			if steps[i].Role == domain.RoleAssistant {
				responded = true
			}
		}
	}
	for i := range tasks {
		t := &tasks[i]
		if !t.Graded {
			t.Kind = KindContext
			continue
		}
		t.Children = subtasks(steps, ids, t.FirstIndex, t.LastIndex)
		if len(t.Children) == 0 {
			t.Children = phases(steps, ids, t.FirstIndex, t.LastIndex)
			continue
		}
		for j := range t.Children {
			c := &t.Children[j]
			if c.Graded {
				c.Children = phases(steps, ids, c.FirstIndex, c.LastIndex)
			} else {
				c.Kind = KindContext
			}
		}
	}
	return tasks
}

// labelTasks maps each step to its task id from the labels, or nil when no
// chunk is labeled. Steps outside a labeled chunk (system, unlabeled, tool
// results of unlabeled calls) stay with the task before them; leading ones
// join the first task.
func labelTasks(n int, lab labels.Labeling) []string {
	out := make([]string, n)
	set := make([]bool, n)
	anyLabel := false
	for ci, c := range lab.Chunks {
		if ci >= len(lab.Labels) || lab.Labels[ci] == nil {
			continue
		}
		anyLabel = true
		for _, si := range c.Steps {
			if si < n {
				out[si], set[si] = lab.Labels[ci].TaskID, true
			}
		}
	}
	if !anyLabel {
		return nil
	}
	cur := "" // leading steps join the first labeled step's task
	if i := slices.Index(set, true); i >= 0 {
		cur = out[i]
	}
	for i := range out {
		if set[i] {
			cur = out[i]
		} else {
			out[i] = cur
		}
	}
	return out
}

func newSection(steps []domain.Step, ids []string, kind string, first, last int) Section {
	s := Section{Kind: kind, FirstIndex: first, LastIndex: last, Children: []Section{}, Graded: Gradable(steps, first, last)}
	if first < len(ids) && last < len(ids) {
		s.FirstStepID, s.LastStepID = ids[first], ids[last]
	}
	return s
}

// requestTitle is the first user message of a range, as a one-line title.
func requestTitle(steps []domain.Step, first, last int) string {
	for i := first; i <= last; i++ {
		if steps[i].Role == domain.RoleUser {
			if t := oneLine(steps[i].Content); t != "" {
				return t
			}
		}
	}
	return ""
}

// oneLine is the first non-empty line of s, cut to MaxTitle runes.
func oneLine(s string) string {
	for line := range strings.SplitSeq(s, "\n") {
		line = strings.Join(strings.Fields(line), " ")
		if line == "" {
			continue
		}
		if utf8.RuneCountInString(line) > MaxTitle {
			r := []rune(line)
			line = strings.TrimSpace(string(r[:MaxTitle-1])) + "…"
		}
		return line
	}
	return ""
}

// subtasks splits a task at its recorded progress: each progress tool call
// (TodoWrite, update_plan) whose current item differs from the current
// subtask's starts a new subtask titled by that item. The steps before the
// first one form a leading subtask titled by the request. No progress
// record, no subtasks.
func subtasks(steps []domain.Step, ids []string, first, last int) []Section {
	type cut struct {
		at    int
		title string
	}
	var cuts []cut
	cur := ""
	for i := first; i <= last; i++ {
		title, ok := progressItem(steps[i])
		if !ok || title == "" || title == cur {
			continue
		}
		cuts = append(cuts, cut{i, title})
		cur = title
	}
	if len(cuts) == 0 {
		return nil
	}
	var out []Section
	if cuts[0].at > first {
		s := newSection(steps, ids, KindSubtask, first, cuts[0].at-1)
		s.Title, s.TitleSource = requestTitle(steps, first, cuts[0].at-1), TitleRequest
		if s.Title == "" {
			s.Title, s.TitleSource = "Before the plan", TitleProgress
		}
		out = append(out, s)
	}
	for k, c := range cuts {
		end := last
		if k+1 < len(cuts) {
			end = cuts[k+1].at - 1
		}
		s := newSection(steps, ids, KindSubtask, c.at, end)
		s.Title, s.TitleSource = c.title, TitleProgress
		out = append(out, s)
	}
	return out
}

// progressTools are the tools agents record their plan with.
var progressTools = map[string]bool{"todowrite": true, "todo_write": true, "update_plan": true, "updateplan": true, "write_todos": true}

// progressItem returns the in-progress item of a progress tool call:
// Claude Code's TodoWrite {todos: [{content, status, activeForm}]} or Codex's
// update_plan {plan: [{step, status}]}.
func progressItem(s domain.Step) (string, bool) {
	if !s.IsToolCall() || !progressTools[strings.ToLower(s.ToolName)] {
		return "", false
	}
	for _, key := range []string{"todos", "plan"} {
		items, _ := s.ToolInput[key].([]any)
		for _, it := range items {
			m, _ := it.(map[string]any)
			if st, _ := m["status"].(string); st != "in_progress" {
				continue
			}
			for _, f := range []string{"content", "step", "activeForm", "title"} {
				if v, _ := m[f].(string); strings.TrimSpace(v) != "" {
					return oneLine(v), true
				}
			}
		}
	}
	return "", true
}

// phases splits a range where the kind of work changes. Steps that are not
// recognisable tool calls stay with the phase they are in; a range with one
// kind of work (or none) has no phases.
func phases(steps []domain.Step, ids []string, first, last int) []Section {
	type cut struct {
		at       int
		activity string
	}
	var cuts []cut
	for i := first; i <= last; i++ {
		a := Activity(steps[i])
		if a == "" || (len(cuts) > 0 && cuts[len(cuts)-1].activity == a) {
			continue
		}
		cuts = append(cuts, cut{i, a})
	}
	if len(cuts) < 2 {
		return []Section{}
	}
	cuts[0].at = first // the lead-in belongs to the first phase
	out := make([]Section, 0, len(cuts))
	for k, c := range cuts {
		end := last
		if k+1 < len(cuts) {
			end = cuts[k+1].at - 1
		}
		s := newSection(steps, ids, KindPhase, c.at, end)
		a := c.activity
		s.Activity = &a
		s.Title, s.TitleSource = activityTitle(a), TitleActivity
		if !s.Graded {
			s.Kind = KindContext
		}
		out = append(out, s)
	}
	return out
}

// The recognisable kinds of work.
const (
	ActivityInspect = "inspect"
	ActivityEdit    = "edit"
	ActivityVerify  = "verify"
	ActivityPublish = "publish"
	ActivityBrowse  = "browse" // "browse:<host>": moving between sites is a change
)

func activityTitle(a string) string {
	if t, ok := activityTitles[a]; ok {
		return t
	}
	if host, ok := strings.CutPrefix(a, ActivityBrowse+":"); ok {
		return "Browsing " + host
	}
	return "Browsing"
}

var activityTitles = map[string]string{ActivityInspect: "Inspecting", ActivityEdit: "Editing", ActivityVerify: "Verifying", ActivityPublish: "Publishing"}

// Activity classifies a tool call by the kind of work it does, from its
// tool name and, for shells, its command; "" when it is not recognisable
// (or not a tool call).
func Activity(s domain.Step) string {
	if !s.IsToolCall() || progressTools[strings.ToLower(s.ToolName)] {
		return ""
	}
	words := nameWords(s.ToolName)
	if host := urlHost(s.ToolInput); host != "" && words.any("navigate", "browser", "browse", "goto", "visit", "fetch", "click", "page", "open", "url") {
		return ActivityBrowse + ":" + host
	}
	if cmd := command(s.ToolInput); cmd != "" && words.any("bash", "shell", "exec", "terminal", "run", "command", "sh") {
		return commandActivity(cmd)
	}
	switch {
	case words.any("publish", "deploy", "commit", "push", "release", "pull"):
		return ActivityPublish
	case words.any("test", "tests", "lint", "check", "verify", "build", "typecheck"):
		return ActivityVerify
	case words.any("edit", "write", "patch", "replace", "create", "insert", "delete", "update", "rename", "move", "multiedit", "apply"):
		return ActivityEdit
	case words.any("read", "grep", "glob", "search", "find", "list", "ls", "view", "get", "fetch", "lookup", "query", "open", "cat", "show", "inspect"):
		return ActivityInspect
	case words.any("navigate", "browser", "browse", "click", "goto"):
		return ActivityBrowse
	}
	return ""
}

// words is a tool name split into lower-case words ("str_replace_editor",
// "WebFetch", "mcp__github__create_pull_request").
type words []string

func nameWords(name string) words {
	var out words
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	prevLower := false
	for _, r := range name {
		switch {
		case r >= 'A' && r <= 'Z':
			if prevLower {
				flush()
			}
			cur = append(cur, r)
			prevLower = false
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			cur = append(cur, r)
			prevLower = true
		default:
			flush()
			prevLower = false
		}
	}
	flush()
	return out
}

func (w words) any(names ...string) bool {
	return slices.ContainsFunc(w, func(x string) bool { return slices.Contains(names, x) })
}

// commandActivity classifies a shell command by its first word(s).
func commandActivity(cmd string) string {
	c := " " + strings.ToLower(strings.Join(strings.Fields(cmd), " ")) + " "
	switch {
	case hasAny(c, " git commit", " git push", " git tag", " gh pr create", " gh release", " npm publish", " docker push", " deploy", " kubectl apply"):
		return ActivityPublish
	case hasAny(c, " go test", " go vet", " go build", " pytest", " npm test", " npm run test", " npm run lint", " yarn test", " cargo test",
		" cargo build", " make test", " make check", " make lint", " tsc", " jest", " vitest", " mvn test", " gradle test", " ruff", " mypy", " eslint"):
		return ActivityVerify
	case hasAny(c, " sed -i", " mv ", " cp ", " rm ", " mkdir ", " touch ", " tee ", " > ", " >> ", " patch ", " git apply", " git checkout -b", " npm install", " go get", " pip install"):
		return ActivityEdit
	case hasAny(c, " cat ", " ls", " grep ", " rg ", " find ", " head ", " tail ", " less ", " wc ", " git status", " git diff", " git log", " git show", " tree", " pwd", " sed -n", " awk "):
		return ActivityInspect
	}
	return ""
}

func hasAny(s string, subs ...string) bool {
	return slices.ContainsFunc(subs, func(x string) bool { return strings.Contains(s, x) })
}

// command is a shell tool's command line: {command: "..."} (Claude Code) or
// {cmd: "..." | ["bash", "-lc", "..."]} (Codex).
func command(in map[string]any) string {
	for _, k := range []string{"command", "cmd"} {
		switch v := in[k].(type) {
		case string:
			return v
		case []any:
			parts := make([]string, 0, len(v))
			for _, p := range v {
				if s, ok := p.(string); ok {
					parts = append(parts, s)
				}
			}
			return strings.Join(parts, " ")
		}
	}
	return ""
}

// urlHost is the host of a tool input's url, if it has one.
func urlHost(in map[string]any) string {
	for _, k := range []string{"url", "href", "uri"} {
		if v, ok := in[k].(string); ok {
			if u, err := url.Parse(v); err == nil && u.Host != "" {
				return strings.ToLower(u.Host)
			}
		}
	}
	return ""
}
