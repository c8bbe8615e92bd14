// Package llmtest is an in-process OpenAI-compatible chat-completions server
// for tests: the one stand-in Critic allows for LLM providers (DESIGN §9).
// Every package that calls models (feedback extraction, titles, GEPA,
// automatic annotation) tests against it instead of a real provider.
//
// Replies are scripted three ways, tried in this order for each request:
//
//  1. rules added with On: a matcher and a queue of replies; the first rule
//     whose matcher accepts the request and still has replies answers (its
//     last reply repeats when Sticky is set);
//  2. replies queued with Enqueue, answered in order;
//  3. the function set with Handle.
//
// With none of them answering, the server replies 500 with a message saying
// the script ran out, so a test that makes more calls than it expected
// fails loudly. A Reply can carry a status code, a Retry-After header, a
// malformed body, a delay, and token usage. A reply's JSON is encoded the
// way the request asked for structured output: as the message content for
// response_format, or as the arguments of the forced tool call when the
// request used tool calling (the Anthropic path of platform/llm).
//
//	srv := llmtest.New(t)
//	srv.Enqueue(llmtest.Status(429).WithRetryAfter("0"), llmtest.JSON(map[string]any{"label": "positive"}))
//	m := llm.Model{Provider: "openai", Name: "test", APIBase: srv.URL}
package llmtest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Message is one chat message of a request.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Request is what the server received.
type Request struct {
	Model    string
	Messages []Message
	// SchemaName is the response_format json_schema name or the forced
	// tool's name.
	SchemaName string
	// Schema is the JSON schema sent (either way).
	Schema json.RawMessage
	// ToolCalling is true when the schema came as a forced tool call.
	ToolCalling bool
	Header      http.Header
	Body        []byte
}

// Text is every message's content joined with newlines: what matchers
// usually search.
func (r Request) Text() string {
	parts := make([]string, len(r.Messages))
	for i, m := range r.Messages {
		parts[i] = m.Content
	}
	return strings.Join(parts, "\n")
}

// Last is the last message's content (the variable part of a platform/llm
// request).
func (r Request) Last() string {
	if len(r.Messages) == 0 {
		return ""
	}
	return r.Messages[len(r.Messages)-1].Content
}

// Contains reports whether any message contains s.
func (r Request) Contains(s string) bool { return strings.Contains(r.Text(), s) }

// Reply is one scripted answer.
type Reply struct {
	// Status is the HTTP status (default 200).
	Status int
	// JSON is the structured answer (marshalled) for a 200.
	JSON any
	// Content is a plain text message content for a 200 (used when JSON is nil).
	Content string
	// Raw, when set, is sent as the body verbatim (malformed bodies, custom
	// error shapes).
	Raw string
	// RetryAfter sets the Retry-After header.
	RetryAfter string
	// Delay is waited before answering (latency injection); a request whose
	// context ends first gets no answer.
	Delay time.Duration
	// PromptTokens and CompletionTokens are the usage reported (defaults 10, 5).
	PromptTokens, CompletionTokens int
	// Message is an error status's message.
	Message string
}

// JSON is a 200 answering v.
func JSON(v any) Reply { return Reply{JSON: v} }

// Status is an error answer with the given status code.
func Status(code int) Reply { return Reply{Status: code, Message: http.StatusText(code)} }

// Malformed is a 200 whose body is not a chat completion.
func Malformed(body string) Reply { return Reply{Raw: body} }

// WithRetryAfter returns r with a Retry-After header.
func (r Reply) WithRetryAfter(v string) Reply { r.RetryAfter = v; return r }

// WithDelay returns r answered after d.
func (r Reply) WithDelay(d time.Duration) Reply { r.Delay = d; return r }

// WithUsage returns r reporting the given token usage.
func (r Reply) WithUsage(prompt, completion int) Reply {
	r.PromptTokens, r.CompletionTokens = prompt, completion
	return r
}

// Rule is a scripted matcher; see Server.On.
type Rule struct {
	match   func(Request) bool
	replies []Reply
	// Sticky keeps answering with the last reply once the queue is spent.
	Sticky bool
	hits   int
}

// Hits is how many requests the rule answered.
func (r *Rule) Hits() int { return r.hits }

// Server is the test server. Its methods are safe for concurrent use.
type Server struct {
	// URL is the base URL to use as an api base (…/v1).
	URL string

	srv      *httptest.Server
	mu       sync.Mutex
	rules    []*Rule
	queue    []Reply
	handle   func(Request) Reply
	latency  time.Duration
	requests []Request
	inFlight int
	maxSeen  int
}

// New starts a server, closed when the test ends.
func New(t testing.TB) *Server {
	s := &Server{}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL + "/v1"
	t.Cleanup(s.Close)
	return s
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// On adds a rule answering requests that match with replies in order.
func (s *Server) On(match func(Request) bool, replies ...Reply) *Rule {
	r := &Rule{match: match, replies: replies}
	s.mu.Lock()
	s.rules = append(s.rules, r)
	s.mu.Unlock()
	return r
}

// Enqueue adds replies answered in order to requests no rule took.
func (s *Server) Enqueue(replies ...Reply) {
	s.mu.Lock()
	s.queue = append(s.queue, replies...)
	s.mu.Unlock()
}

// Handle sets the function answering requests nothing else took.
func (s *Server) Handle(fn func(Request) Reply) {
	s.mu.Lock()
	s.handle = fn
	s.mu.Unlock()
}

// SetLatency delays every answer by d (on top of a reply's own Delay).
func (s *Server) SetLatency(d time.Duration) {
	s.mu.Lock()
	s.latency = d
	s.mu.Unlock()
}

// Requests returns what the server received, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Calls is how many requests arrived.
func (s *Server) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

// MaxInFlight is the most requests that were being answered at once.
func (s *Server) MaxInFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxSeen
}

// DeadURL returns an api base where nothing listens.
func DeadURL(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr + "/v1"
}

type wireRequest struct {
	Model          string    `json:"model"`
	Messages       []Message `json:"messages"`
	ResponseFormat *struct {
		JSONSchema *struct {
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	} `json:"response_format"`
	Tools []struct {
		Function struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
}

func (s *Server) next(req Request) (Reply, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.rules {
		if !r.match(req) {
			continue
		}
		if r.hits < len(r.replies) {
			r.hits++
			return r.replies[r.hits-1], true
		}
		if r.Sticky && len(r.replies) > 0 {
			r.hits++
			return r.replies[len(r.replies)-1], true
		}
	}
	if len(s.queue) > 0 {
		rep := s.queue[0]
		s.queue = s.queue[1:]
		return rep, true
	}
	if s.handle != nil {
		h := s.handle
		s.mu.Unlock()
		rep := h(req)
		s.mu.Lock()
		return rep, true
	}
	return Reply{}, false
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.Error(w, `{"error":{"message":"llmtest serves POST /v1/chat/completions only","type":"invalid_request_error"}}`, http.StatusNotFound)
		return
	}
	body, _ := io.ReadAll(r.Body) // a broken body fails to decode below
	var wr wireRequest
	if err := json.Unmarshal(body, &wr); err != nil {
		writeErr(w, http.StatusBadRequest, "llmtest: request is not JSON: "+err.Error())
		return
	}
	req := Request{Model: wr.Model, Messages: wr.Messages, Header: r.Header.Clone(), Body: body}
	if wr.ResponseFormat != nil && wr.ResponseFormat.JSONSchema != nil {
		req.SchemaName, req.Schema = wr.ResponseFormat.JSONSchema.Name, wr.ResponseFormat.JSONSchema.Schema
	} else if len(wr.Tools) > 0 {
		req.SchemaName, req.Schema, req.ToolCalling = wr.Tools[0].Function.Name, wr.Tools[0].Function.Parameters, true
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.inFlight++
	s.maxSeen = max(s.maxSeen, s.inFlight)
	latency := s.latency
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inFlight--
		s.mu.Unlock()
	}()

	rep, ok := s.next(req)
	if !ok {
		writeErr(w, http.StatusInternalServerError, fmt.Sprintf("llmtest: no scripted reply left for request %d", s.Calls()))
		return
	}
	if d := latency + rep.Delay; d > 0 {
		t := time.NewTimer(d)
		select {
		case <-r.Context().Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
	if rep.RetryAfter != "" {
		w.Header().Set("Retry-After", rep.RetryAfter)
	}
	status := cmp.Or(rep.Status, http.StatusOK)
	if rep.Raw != "" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(rep.Raw))
		return
	}
	if status != http.StatusOK {
		writeErr(w, status, cmp.Or(rep.Message, http.StatusText(status)))
		return
	}
	content := rep.Content
	if rep.JSON != nil {
		raw, err := json.Marshal(rep.JSON)
		if err != nil {
			writeErr(w, http.StatusInternalServerError, "llmtest: reply JSON: "+err.Error())
			return
		}
		content = string(raw)
	}
	prompt, completion := rep.PromptTokens, rep.CompletionTokens
	if prompt == 0 && completion == 0 {
		prompt, completion = 10, 5
	}
	msg := map[string]any{"role": "assistant", "content": content}
	if req.ToolCalling {
		msg["content"] = nil
		msg["tool_calls"] = []map[string]any{{"id": "call_1", "type": "function",
			"function": map[string]any{"name": req.SchemaName, "arguments": content}}}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-llmtest", "object": "chat.completion", "created": time.Now().Unix(), "model": req.Model,
		"choices": []map[string]any{{"index": 0, "message": msg, "finish_reason": "stop"}},
		"usage":   map[string]any{"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
	})
}

func writeErr(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "llmtest_error"}})
}
