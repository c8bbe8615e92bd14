package labels

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"

	"github.com/criticml/critic/domain"
)

// ChunkKind is what a chunk holds.
type ChunkKind string

// The three kinds of chunk the spec names.
const (
	KindUserMessage  ChunkKind = "user_message"
	KindAgentMessage ChunkKind = "agent_message"
	KindToolCall     ChunkKind = "tool_call"
)

// Chunk is the unit a label describes: a user message, an agent message, or
// a tool call with its result. System steps are context and belong to no
// chunk.
type Chunk struct {
	// ID is stable: it is derived from the chunk's own content and how many
	// identical chunks come before it, so a trace that grows (a synced
	// session, an appended revision) keeps the ids — and the labels — of the
	// chunks it already had, and only new or changed chunks need a label.
	ID    string
	Actor Actor
	Kind  ChunkKind
	// Steps are the zero-based indices of the chunk's steps: one, or a tool
	// call followed by its result (not necessarily adjacent when the agent
	// made parallel calls).
	Steps []int
	// Complete is false for a tool call whose result has not been recorded
	// yet; its id changes when the result arrives, so it is labeled then.
	Complete bool
}

// Chunks cuts a trace into chunks, in the order of their first step. A tool
// result joins the latest earlier call with the same tool_call_id that has
// no result yet; without ids it joins the call right before it. A result
// with no call it can join stands alone as a tool-call chunk.
func Chunks(steps []domain.Step) []Chunk {
	var out []Chunk
	open := map[string]int{} // tool_call_id → chunk index awaiting a result
	lastCall := -1           // chunk of the step just before, if it is a call without an id
	for i, s := range steps {
		prevCall := lastCall
		lastCall = -1
		switch {
		case s.Role == domain.RoleUser:
			out = append(out, Chunk{Actor: ActorUser, Kind: KindUserMessage, Steps: []int{i}, Complete: true})
		case s.IsToolCall():
			out = append(out, Chunk{Actor: ActorAgent, Kind: KindToolCall, Steps: []int{i}})
			if s.ToolCallID != "" {
				open[s.ToolCallID] = len(out) - 1
			} else {
				lastCall = len(out) - 1
			}
		case s.Role == domain.RoleAssistant:
			out = append(out, Chunk{Actor: ActorAgent, Kind: KindAgentMessage, Steps: []int{i}, Complete: true})
		case s.Role == domain.RoleTool:
			c := -1
			if s.ToolCallID != "" {
				if j, ok := open[s.ToolCallID]; ok {
					c = j
					delete(open, s.ToolCallID)
				}
			} else if prevCall >= 0 {
				c = prevCall
			}
			if c >= 0 {
				out[c].Steps = append(out[c].Steps, i)
				out[c].Complete = true
			} else {
				out = append(out, Chunk{Actor: ActorAgent, Kind: KindToolCall, Steps: []int{i}, Complete: true})
			}
		}
	}
	seen := map[string]int{}
	for k := range out {
		h := chunkHash(steps, out[k])
		n := seen[h]
		seen[h] = n + 1
		out[k].ID = "ck_" + h
		if n > 0 {
			out[k].ID += "_" + strconv.Itoa(n+1)
		}
	}
	return out
}

// chunkHash is the first 16 hex digits of SHA-256 over the chunk's kind and
// its steps' role, content, tool name, tool input (keys sorted by
// encoding/json) and tool call id.
func chunkHash(steps []domain.Step, c Chunk) string {
	h := sha256.New()
	h.Write([]byte(c.Kind))
	if !c.Complete {
		h.Write([]byte{0, 'p'})
	}
	for _, i := range c.Steps {
		s := steps[i]
		in := domain.CanonicalToolInput(s.ToolInput)
		for _, part := range [][]byte{[]byte(s.Role), []byte(s.Content), []byte(s.ToolName), in, []byte(s.ToolCallID)} {
			h.Write([]byte{0})
			h.Write([]byte(strconv.Itoa(len(part))))
			h.Write([]byte{':'})
			h.Write(part)
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// AgentResponded reports whether a trace is ready to label: the spec labels
// a trace once the agent has responded, not while it holds only the request.
func AgentResponded(steps []domain.Step) bool {
	return slices.ContainsFunc(steps, func(s domain.Step) bool { return s.Role == domain.RoleAssistant })
}

// ToLabel returns the chunks that still need a label given the labels a
// trace already has (by chunk id): the new and the changed ones, in order.
// Incomplete tool calls wait for their result. This is what makes a grown
// trace cost one model call per new chunk.
func ToLabel(chunks []Chunk, have map[string]bool) []Chunk {
	var out []Chunk
	for _, c := range chunks {
		if c.Complete && !have[c.ID] {
			out = append(out, c)
		}
	}
	return out
}
