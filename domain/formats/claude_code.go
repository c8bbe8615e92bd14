package formats

import (
	"bytes"
	"container/heap"
	"encoding/json"
	"regexp"
	"strings"

	"github.com/criticml/critic/domain"
)

// ClaudeCode reads a Claude Code session transcript
// (~/.claude/projects/<project>/<session>.jsonl): one trace per payload.
//
// Records are read in file order, which is the order Claude Code wrote them:
//   - user and assistant records carry an Anthropic message and map like
//     anthropic_messages (see anthropicConverter). Claude Code streams one
//     assistant message as several records sharing message.id, one content
//     block each; each block becomes its own step, and a block repeated under
//     the same message.id (a re-written record) or a second result for the same
//     tool_use id is dropped.
//   - isMeta user records (hook feedback, skill bodies, command caveats) are
//     kept as user steps with metadata.meta = true: the model saw them and
//     reacted to them. Slash commands (<command-name>) are kept as user steps
//     with metadata.command, and <local-command-stdout> records with
//     metadata.command_output = true. isCompactSummary records are kept with
//     metadata.compact_summary = true.
//   - system records with text content (compact_boundary, local_command, …)
//     become system steps with metadata.subtype; those without text
//     (turn_duration, api_error, stop_hook_summary) are telemetry and skipped.
//   - Sidechain (subagent) records stay where they are in the file, marked
//     metadata.sidechain = true (and metadata.agent_id when recorded), so the
//     parent's Task call, the subagent's work and the Task result read in the
//     order they happened.
//   - Synthetic assistant records (isApiErrorMessage, model "<synthetic>") are
//     kept with metadata.synthetic = true: the user saw them, the model did not
//     write them.
//   - toolUseResult (Claude Code's structured tool result) is kept as the tool
//     step's metadata.tool_use_result when the record holds one result.
//   - A tool_result whose tool_use is not in the file (a transcript cut at
//     the head, as shared excerpts and test fixtures often are, or a resumed
//     session whose call was written to the earlier file) is kept as a tool
//     step with its id moved to metadata.unmatched_tool_call_id, as the
//     per-call formats do: one missing call must not reject the session.
//   - An attachment record of type queued_command (a message the user typed
//     while the agent was working) becomes a user step with
//     metadata.queued_command = true; other attachments are harness context.
//   - Every other record type (summary, queue-operation, file-history-snapshot,
//     progress, and types added later) adds no step; unknown types are never
//     an error. Subagent work recorded in separate agent-*.jsonl files is
//     imported from those files.
//
// A Claude Code web session as its API returns it ({"loglines": [records]})
// is read like the JSONL of those records.
//
// Every step has metadata.timestamp (the record's) and metadata.uuid. The
// trace's ExternalID is the sessionId of the last message record (a resumed
// file starts with records copied from the earlier session); a subagent file
// whose message records are all sidechain records with an agentId gets
// "<sessionId>:<agentId>" so it does not replace its parent session. The
// title is a custom-title record's, else the summary of this file's leaf,
// else an ai-title record's, else empty (the importer derives one).
type ClaudeCode struct{}

func (ClaudeCode) Name() string { return "claude_code" }
func (ClaudeCode) Description() string {
	return "Claude Code session transcript JSONL (~/.claude/projects/**/*.jsonl); one trace per file."
}

// ccDetectLines bounds detection: transcripts can open with summary,
// queue-operation or file-history-snapshot records before the first message.
const ccDetectLines = 30

// Detect: one of the first lines is a user/assistant/system record with a
// sessionId and a message or uuid, or a summary record with a leafUuid.
func (ClaudeCode) Detect(data []byte) bool {
	if recs, ok := ccLoglines(data); ok {
		for _, r := range recs[:min(len(recs), ccDetectLines)] {
			var p struct {
				Type    string          `json:"type"`
				Message json.RawMessage `json:"message"`
			}
			if json.Unmarshal(r, &p) == nil && (p.Type == "user" || p.Type == "assistant") && firstJSONByte(p.Message) == '{' {
				return true
			}
		}
		return false
	}
	found, n := false, 0
	_ = eachLine(data, func(_ int, raw []byte) error {
		n++
		var p struct {
			Type      string          `json:"type"`
			SessionID *string         `json:"sessionId"`
			UUID      *string         `json:"uuid"`
			Message   json.RawMessage `json:"message"`
			LeafUUID  *string         `json:"leafUuid"`
		}
		if firstJSONByte(raw) == '{' && json.Unmarshal(raw, &p) == nil {
			switch p.Type {
			case "user", "assistant", "system":
				found = p.SessionID != nil && (p.Message != nil || p.UUID != nil)
			case "summary":
				found = p.LeafUUID != nil
			}
		}
		if found || n >= ccDetectLines {
			return errStopScan
		}
		return nil
	})
	return found
}

type ccRecord struct {
	Type              string          `json:"type"`
	UUID              string          `json:"uuid"`
	SessionID         string          `json:"sessionId"`
	Timestamp         json.RawMessage `json:"timestamp"`
	IsSidechain       bool            `json:"isSidechain"`
	IsMeta            bool            `json:"isMeta"`
	IsCompactSummary  bool            `json:"isCompactSummary"`
	IsAPIErrorMessage bool            `json:"isApiErrorMessage"`
	AgentID           string          `json:"agentId"`
	Cwd               string          `json:"cwd"`
	Version           string          `json:"version"`
	GitBranch         string          `json:"gitBranch"`
	Message           json.RawMessage `json:"message"`
	ToolUseResult     json.RawMessage `json:"toolUseResult"`
	Subtype           string          `json:"subtype"`
	Content           json.RawMessage `json:"content"`
	Attachment        json.RawMessage `json:"attachment"`
}

type ccMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	Model   string          `json:"model"`
	ID      string          `json:"id"`
}

var ccCommandRE = regexp.MustCompile(`<command-name>\s*([^<]*?)\s*</command-name>`)

// ccLoglines recognises a Claude Code web session as its API returns it (and
// tools such as claude-code-transcripts save it): one JSON object whose
// "loglines" array holds the transcript records. It returns the records.
func ccLoglines(data []byte) ([]json.RawMessage, bool) {
	if firstJSONByte(data) != '{' {
		return nil, false
	}
	var w struct {
		Loglines []json.RawMessage `json:"loglines"`
	}
	if json.Unmarshal(data, &w) != nil || w.Loglines == nil {
		return nil, false
	}
	return w.Loglines, true
}

// Parse reads a transcript. A web session ({"loglines": [...]}) is read as the
// JSONL of its records: line N of an error is loglines[N-1].
func (c ClaudeCode) Parse(data []byte) ([]domain.Trace, error) {
	if recs, ok := ccLoglines(data); ok {
		var b bytes.Buffer
		for _, r := range recs {
			if err := json.Compact(&b, r); err != nil {
				return nil, domain.Invalid("loglines: %v", err)
			}
			b.WriteByte('\n')
		}
		return c.parseJSONL(b.Bytes())
	}
	return c.parseJSONL(data)
}

func (ClaudeCode) parseJSONL(data []byte) ([]domain.Trace, error) {
	t := domain.Trace{Steps: []domain.Step{}, SessionSync: true}
	meta := map[string]any{"agent": "claude-code"}
	var stepLines []int
	conv := &anthropicConverter{names: map[string]string{}}
	seenBlock := map[string]bool{} // message.id + block, for re-written records
	answered := map[string]bool{}  // tool_use ids that already have a result
	uuids := map[string]bool{}
	var sessionID, agentID string
	// Title records and summaries, with the session they belong to: a
	// forked session's file starts with its parent's records, titles
	// included, and those must not name the fork.
	type titled struct{ session, leaf, text string }
	var customTitles, aiTitles, summaries []titled
	uuidSession := map[string]string{}
	type sessionStart struct {
		id   string
		step int
	}
	var starts []sessionStart // where each session's records begin in t.Steps
	allSidechain, messages := true, 0

	recs, err := ccReadLines(data)
	if err != nil {
		return nil, err
	}
	convert := func(line int, raw []byte, typ string) error {
		switch typ {
		case "user", "assistant", "system", "attachment":
		case "summary", "custom-title", "ai-title":
			var r struct {
				Summary     json.RawMessage `json:"summary"`
				LeafUUID    json.RawMessage `json:"leafUuid"`
				CustomTitle json.RawMessage `json:"customTitle"`
				AITitle     json.RawMessage `json:"aiTitle"`
				SessionID   json.RawMessage `json:"sessionId"`
			}
			if json.Unmarshal(raw, &r) == nil {
				sid, _ := asJSONString(r.SessionID)
				s, _ := asJSONString(r.Summary)
				leaf, _ := asJSONString(r.LeafUUID)
				if s != "" {
					summaries = append(summaries, titled{sid, leaf, s})
				}
				if s, _ := asJSONString(r.CustomTitle); s != "" {
					customTitles = append(customTitles, titled{sid, "", s})
				}
				if s, _ := asJSONString(r.AITitle); s != "" {
					aiTitles = append(aiTitles, titled{sid, "", s})
				}
			}
			return nil
		default:
			return nil // unknown and bookkeeping record types add no step
		}
		var r ccRecord
		if err := decodeJSON(raw, &r); err != nil {
			return err
		}
		queued, isQueued := "", false
		if typ == "attachment" {
			var a struct {
				Type   json.RawMessage `json:"type"`
				Prompt json.RawMessage `json:"prompt"`
			}
			if firstJSONByte(r.Attachment) == '{' && json.Unmarshal(r.Attachment, &a) == nil {
				at, _ := asJSONString(a.Type)
				queued, isQueued = asJSONString(a.Prompt)
				isQueued = isQueued && at == "queued_command" && strings.TrimSpace(queued) != ""
			}
			if !isQueued {
				return nil // other attachments are context the harness adds
			}
		}
		stamp, err := normalizeTimestamp(r.Timestamp)
		if err != nil {
			return domain.InvalidAt(line, "timestamp", "%v", err)
		}
		if r.UUID != "" {
			uuids[r.UUID] = true
			uuidSession[r.UUID] = r.SessionID
		}
		if r.SessionID != "" {
			if r.SessionID != sessionID {
				starts = append(starts, sessionStart{r.SessionID, len(t.Steps)})
			}
			sessionID = r.SessionID
		}
		if !r.IsSidechain || r.AgentID == "" {
			allSidechain = false
		} else if agentID == "" {
			agentID = r.AgentID
		}
		messages++
		for k, v := range map[string]string{"cwd": r.Cwd, "version": r.Version, "git_branch": r.GitBranch} {
			if _, ok := meta[k]; !ok {
				putString(meta, k, v)
			}
		}

		var steps []domain.Step
		switch typ {
		case "attachment":
			steps = []domain.Step{{Role: domain.RoleUser, Content: queued, Metadata: map[string]any{"queued_command": true}}}
		case "system":
			s, ok := asJSONString(r.Content)
			if !ok || strings.TrimSpace(s) == "" {
				return nil
			}
			st := domain.Step{Role: domain.RoleSystem, Content: s}
			putString(ensureMeta(&st), "subtype", r.Subtype)
			steps = []domain.Step{st}
		default:
			if isJSONNull(r.Message) {
				return nil
			}
			if firstJSONByte(r.Message) != '{' {
				return domain.InvalidAt(line, "message", "message must be a JSON object")
			}
			var m ccMessage
			if err := decodeJSON(r.Message, &m); err != nil {
				return domain.InvalidAt(line, "message", "%v", err)
			}
			role := domain.RoleUser
			if typ == "assistant" {
				role = domain.RoleAssistant
				if m.Model != "" && m.Model != "<synthetic>" {
					if _, ok := meta["model"]; !ok {
						meta["model"] = m.Model
					}
				}
			}
			steps, err = conv.steps(role, m.Content, "message.content")
			if err != nil {
				return err
			}
			steps = ccDedupe(steps, m.ID, seenBlock, answered)
			results := 0
			for _, s := range steps {
				if s.Role == domain.RoleTool {
					results++
				}
			}
			for k := range steps {
				s := &steps[k]
				switch {
				case s.Role == domain.RoleTool:
					if results == 1 && !isJSONNull(r.ToolUseResult) {
						var v any
						if decodeJSON(r.ToolUseResult, &v) == nil {
							setStepMeta(s, "tool_use_result", v)
						}
					}
				case s.Role == domain.RoleUser:
					if r.IsMeta {
						setStepMeta(s, "meta", true)
					}
					if r.IsCompactSummary {
						setStepMeta(s, "compact_summary", true)
					}
					if c := ccCommandRE.FindStringSubmatch(s.Content); c != nil {
						setStepMeta(s, "command", c[1])
					}
					if strings.Contains(s.Content, "<local-command-stdout>") || strings.Contains(s.Content, "<local-command-stderr>") {
						setStepMeta(s, "command_output", true)
					}
					if kind := ccHarnessKind(r, s); kind != "" {
						setStepMeta(s, "harness", true)
						setStepMeta(s, "harness_kind", kind)
					}
				case s.Role == domain.RoleAssistant:
					if r.IsAPIErrorMessage || m.Model == "<synthetic>" {
						setStepMeta(s, "synthetic", true)
					}
				}
			}
		}
		for k := range steps {
			s := &steps[k]
			if s.Role != domain.RoleTool {
				s.Content = stripTerminalCodes(s.Content)
			}
			putString(ensureMeta(s), "timestamp", stamp)
			putString(s.Metadata, "uuid", r.UUID)
			if r.IsSidechain {
				s.Metadata["sidechain"] = true
				putString(s.Metadata, "agent_id", r.AgentID)
			}
			stepLines = append(stepLines, line)
		}
		t.Steps = append(t.Steps, steps...)
		return nil
	}
	for _, i := range ccOrder(recs) { // errors at the record's own line
		r := recs[i]
		if err := convert(r.line, r.raw, r.typ); err != nil {
			return nil, domain.AtLine(err, r.line)
		}
	}
	t.ExternalID = sessionID
	if allSidechain && messages > 0 && agentID != "" && sessionID != "" {
		t.ExternalID = sessionID + ":" + agentID
		meta["parent_session_id"] = sessionID
		meta["agent_id"] = agentID
	}
	t.Metadata = meta
	own := func(ts []titled) []titled {
		var out []titled
		for _, x := range ts {
			if x.session == "" && x.leaf != "" {
				x.session = uuidSession[x.leaf]
			}
			if x.session == "" || x.session == sessionID {
				out = append(out, x)
			}
		}
		return out
	}
	if c := own(customTitles); len(c) > 0 {
		t.Title = c[len(c)-1].text
	}
	if sum := own(summaries); t.Title == "" && len(sum) > 0 {
		t.Title = sum[len(sum)-1].text
		for _, s := range sum {
			if uuids[s.leaf] {
				t.Title = s.text
			}
		}
	}
	if a := own(aiTitles); t.Title == "" && len(a) > 0 {
		t.Title = a[len(a)-1].text
	}
	if t.Title == "" && len(starts) > 1 && starts[len(starts)-1].id == sessionID {
		// A fork (or a resumed copy) without a title of its own: name it by
		// its own first prompt, not the parent's that opens the file.
		for _, s := range t.Steps[starts[len(starts)-1].step:] {
			if s.Role == domain.RoleUser && s.Metadata["harness"] == nil && strings.TrimSpace(s.Content) != "" {
				t.Title = domain.DefaultTitle([]domain.Step{s})
				break
			}
		}
	}
	t.Steps = finishSteps(t.Steps)
	if err := validateSession(t, stepLines); err != nil {
		return nil, err
	}
	return []domain.Trace{t}, nil
}

// ccDedupe drops blocks Claude Code wrote twice: a tool_use id already seen,
// a second result for the same tool_use id, or the same text/thinking under
// the same message.id.
func ccDedupe(steps []domain.Step, msgID string, seen, answered map[string]bool) []domain.Step {
	out := steps[:0]
	for _, s := range steps {
		var key string
		switch {
		case s.Role == domain.RoleTool && s.ToolCallID != "":
			if answered[s.ToolCallID] {
				continue
			}
			answered[s.ToolCallID] = true
		case s.IsToolCall() && s.ToolCallID != "":
			key = "call\x00" + s.ToolCallID
		case msgID != "" && s.Role == domain.RoleAssistant:
			thinking, _ := s.Metadata["thinking"].(bool)
			key = msgID + "\x00" + s.Content
			if thinking {
				key = "thinking\x00" + key
			}
		}
		if key != "" {
			if seen[key] {
				continue
			}
			seen[key] = true
		}
		out = append(out, s)
	}
	return out
}

// ccRec is one transcript record before conversion: where it is in the file
// and where it sits in the parentUuid chain.
type ccRec struct {
	line         int
	raw          []byte
	typ          string
	uuid, parent string
}

// ccReadLines reads every record's type and chain links, in file order, so
// a malformed line is reported before anything is converted.
func ccReadLines(data []byte) ([]ccRec, error) {
	var out []ccRec
	err := eachLine(data, func(line int, raw []byte) error {
		if firstJSONByte(raw) != '{' {
			return domain.InvalidAt(line, "", "expected a JSON object")
		}
		var r struct {
			Type   json.RawMessage `json:"type"`
			UUID   json.RawMessage `json:"uuid"`
			Parent json.RawMessage `json:"parentUuid"`
		}
		if err := decodeJSON(raw, &r); err != nil {
			return err
		}
		l := ccRec{line: line, raw: raw}
		l.typ, _ = asJSONString(r.Type)
		l.uuid, _ = asJSONString(r.UUID)
		l.parent, _ = asJSONString(r.Parent)
		out = append(out, l)
		return nil
	})
	return out, err
}

// ccOrder is the order records are read in: file order, except that a
// record never comes before its parent (parentUuid). Interactive Claude
// Code sometimes writes a turn's user record after the first assistant
// records that answer it; their parentUuid chain (and timestamps) put the
// prompt first, and Claude Code itself follows the chain on --resume.
//
// It is a topological order that always takes the earliest record in the
// file among those whose parent is placed (or not in the file: a transcript
// cut at the head). Taking file order rather than timestamps among ready
// records is what keeps a growing file appending: when every record of a
// prefix has its parent in that prefix, the prefix's order is a prefix of
// the grown file's order, so session sync appends and keeps step ids. (A
// record whose parent is not written yet is the one case that could move;
// `critic sessions sync` holds such records back until the parent arrives,
// see client.SettledClaudeCode.) Parallel tool calls branch the chain (both
// results hang off their calls), which file order among ready records keeps
// as Claude Code wrote them; ordering siblings by timestamp would also move
// a record written late with an early timestamp in front of steps already
// synced. Records in a cycle (a corrupt file) come last, in file order.
func ccOrder(recs []ccRec) []int {
	pos := make(map[string]int, len(recs))
	for i, r := range recs {
		if r.uuid != "" {
			if _, dup := pos[r.uuid]; !dup {
				pos[r.uuid] = i
			}
		}
	}
	children := map[int][]int{}
	ready := &intHeap{}
	inOrder := true
	for i, r := range recs {
		if p, ok := pos[r.parent]; ok && r.parent != "" && p != i {
			children[p] = append(children[p], i)
			if p > i {
				inOrder = false
			}
			continue
		}
		heap.Push(ready, i)
	}
	order := make([]int, 0, len(recs))
	if inOrder {
		for i := range recs {
			order = append(order, i)
		}
		return order
	}
	placed := make([]bool, len(recs))
	for ready.Len() > 0 {
		i := heap.Pop(ready).(int)
		placed[i] = true
		order = append(order, i)
		for _, c := range children[i] {
			heap.Push(ready, c)
		}
	}
	for i := range recs {
		if !placed[i] {
			order = append(order, i)
		}
	}
	return order
}

// intHeap is a min-heap of record indexes (container/heap).
type intHeap []int

func (h intHeap) Len() int           { return len(h) }
func (h intHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h intHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *intHeap) Push(v any)        { *h = append(*h, v.(int)) }
func (h *intHeap) Pop() any {
	old := *h
	v := old[len(old)-1]
	*h = old[:len(old)-1]
	return v
}

// ClaudeCodeSettled returns the part of a growing transcript whose reading
// order can no longer change: the file up to the first record whose parent
// (parentUuid) is not in the file yet. Claude Code can write a prompt after
// the assistant records that answer it; uploading those records first would
// put them before the prompt, and the prompt's arrival would then reorder
// steps already synced (a divergent session). Held-back records go up once
// their parent is written. A record whose parent never comes (a transcript
// cut at the head) is held back too, so the caller decides when a file has
// been quiet long enough to be read whole. Lines that are not JSON objects
// are left for the parser to report.
func ClaudeCodeSettled(data []byte) []byte {
	type link struct {
		start  int
		parent string
	}
	var links []link
	uuids := map[string]bool{}
	off := 0
	for raw := range bytes.Lines(data) {
		var r struct {
			UUID   string `json:"uuid"`
			Parent string `json:"parentUuid"`
		}
		if firstJSONByte(raw) == '{' && json.Unmarshal(raw, &r) == nil {
			if r.UUID != "" {
				uuids[r.UUID] = true
			}
			if r.Parent != "" {
				links = append(links, link{off, r.Parent})
			}
		}
		off += len(raw)
	}
	for _, l := range links {
		if !uuids[l.parent] {
			return data[:l.start]
		}
	}
	return data
}

// ccHarnessKind says whether a user record is Claude Code's own doing
// rather than the person's words, and what kind: "command" (a slash command
// such as /exit or /compact), "command_output" (its printed output),
// "command_caveat" (the note Claude Code puts before local command
// output), "hook_feedback" (a hook's message to the model),
// "compact_summary" (the summary /compact writes) or "meta" (any other
// isMeta record: skill bodies, reminders). Harness steps stay user steps,
// as the model saw them, with metadata.harness = true and
// metadata.harness_kind, so readers and feedback extraction can tell them
// from what the user said. Queued messages (typed by the user while the
// agent worked) are the user's.
func ccHarnessKind(r ccRecord, s *domain.Step) string {
	switch {
	case r.IsCompactSummary:
		return "compact_summary"
	case strings.Contains(s.Content, "<local-command-caveat>"):
		return "command_caveat"
	case s.Metadata["command"] != nil:
		return "command"
	case s.Metadata["command_output"] != nil:
		return "command_output"
	case ccHookFeedbackRE.MatchString(s.Content):
		return "hook_feedback"
	case r.IsMeta:
		return "meta"
	}
	return ""
}

var ccHookFeedbackRE = regexp.MustCompile(`^\s*(?:[A-Za-z]+ )?hook (?:feedback|blocking error)\b`)

// terminalCodeRE matches ANSI terminal control sequences: CSI (colours,
// cursor moves), OSC (titles, hyperlinks; ended by BEL or ST) and the
// two-byte escapes. Claude Code keeps them in local command output such as
// /compact's; they are noise in a trace.
var terminalCodeRE = regexp.MustCompile(`\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]`)

// stripTerminalCodes removes terminal control sequences from s.
func stripTerminalCodes(s string) string {
	if !strings.Contains(s, "\x1b") {
		return s
	}
	return terminalCodeRE.ReplaceAllString(s, "")
}
