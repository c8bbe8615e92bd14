package llm

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Options tune a Client; zero values take the defaults documented per field.
type Options struct {
	// Timeout bounds each attempt (default 90 s).
	Timeout time.Duration
	// MaxRetries is how many times a 429, 5xx, timeout or network failure is
	// retried (default 4).
	MaxRetries int
	// RetryInvalid is how many times an answer that is not JSON or fails the
	// schema is asked for again (default 1): models occasionally slip, and
	// one more try is cheaper than failing a whole extraction.
	RetryInvalid int
	// BaseBackoff and MaxBackoff shape exponential backoff with jitter
	// (defaults 500 ms and 30 s); a Retry-After header wins, capped at
	// MaxRetryAfter (default 120 s).
	BaseBackoff, MaxBackoff, MaxRetryAfter time.Duration
	// Concurrency caps calls in flight through this client (default 16):
	// the global cap every feature shares.
	Concurrency int
	// HTTPClient sends the requests (default: a client whose transport
	// records Retry-After).
	HTTPClient *http.Client
	// Role is the server role the client plays (feedback, fast, step_label,
	// gepa_task, gepa_reflection): the label its calls are observed under.
	Role string
	// Observer, when set, is told about every request sent to the provider.
	Observer Observer
}

// Observer is told about every request a Client sends to its provider (each
// attempt of a Call: a retried call costs, and is counted, once per
// request), so calls, errors, latency and tokens can be counted by model and
// role. The Prometheus metrics implement it; it lives here so this package
// imports no metrics code. elapsed excludes the wait for a call slot; err is
// nil when the answer was valid JSON matching the schema.
type Observer interface {
	LLMCall(model, role string, elapsed time.Duration, promptTokens, completionTokens int, err error)
}

func (o *Options) defaults() {
	if o.Timeout <= 0 {
		o.Timeout = 90 * time.Second
	}
	o.MaxRetries = max(cmp.Or(o.MaxRetries, 4), 0)
	o.RetryInvalid = max(cmp.Or(o.RetryInvalid, 1), 0)
	if o.BaseBackoff <= 0 {
		o.BaseBackoff = 500 * time.Millisecond
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 30 * time.Second
	}
	if o.MaxRetryAfter <= 0 {
		o.MaxRetryAfter = 120 * time.Second
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 16
	}
}

// NoRetries is MaxRetries/RetryInvalid's explicit zero (tests, evaluations).
const NoRetries = -1

// Client calls one model. It is safe for concurrent use; Concurrency bounds
// how many calls are in flight at once.
type Client struct {
	model Model
	opts  Options
	api   *openai.Client
	sem   chan struct{}
}

// New returns a client for m.
func New(m Model, opts Options) *Client {
	opts.defaults()
	cfg := openai.DefaultConfig(m.APIKey)
	cfg.BaseURL = strings.TrimRight(m.APIBase, "/")
	// m's client first: for a tenant-named base the egress guard is not optional.
	hc := cmp.Or(m.HTTPClient, opts.HTTPClient, &http.Client{})
	wrapped := *hc
	wrapped.Transport = retryAfterTransport{cmp.Or(hc.Transport, http.DefaultTransport)}
	cfg.HTTPClient = &wrapped
	return &Client{model: m, opts: opts, api: openai.NewClientWithConfig(cfg), sem: make(chan struct{}, opts.Concurrency)}
}

// WithObserver returns a client that reports every provider request to o
// under role (nil o: none). It shares c's connection and its concurrency
// cap, so the cap stays global; the process wires observers once its
// telemetry exists, after its model roles were read from the environment.
func (c *Client) WithObserver(o Observer, role string) *Client {
	cp := *c
	cp.opts.Observer, cp.opts.Role = o, role
	return &cp
}

// Model is what the client calls.
func (c *Client) Model() Model { return c.model }

// Limit is the client's concurrency cap.
func (c *Client) Limit() int { return c.opts.Concurrency }

// Request is one structured call. The messages are sent in the order
// Instructions, Context, Input so that everything stable across calls comes
// first and providers' prompt caches hit: Instructions are the same for
// every call of a prompt version, Context the same for every target of a
// trace, Input is what differs.
type Request struct {
	// Name names the schema (and, with tool calling, the tool); [a-z_]+.
	Name         string
	Instructions string
	Context      string
	Input        string
	Schema       *Schema
	MaxTokens    int
}

// Usage is what a call cost, summed over its attempts.
type Usage struct {
	Calls        int `json:"calls"`
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
	CachedTokens int `json:"cached_input_tokens"`
}

// Add sums usages.
func (u *Usage) Add(o Usage) {
	u.Calls += o.Calls
	u.InputTokens += o.InputTokens
	u.OutputTokens += o.OutputTokens
	u.CachedTokens += o.CachedTokens
}

// Response is a validated answer.
type Response struct {
	JSON     json.RawMessage // the object that passed the schema
	Usage    Usage
	Attempts int
}

// Error kinds.
const (
	KindHTTP      = "http"      // the provider answered with an error status
	KindTimeout   = "timeout"   // an attempt ran past Options.Timeout
	KindNetwork   = "network"   // the provider could not be reached
	KindMalformed = "malformed" // the answer was not the JSON object asked for
	KindSchema    = "schema"    // the JSON did not match the schema
)

// Error is a call that failed after its retries. Its message names the
// model, provider, endpoint, the HTTP status or the field that failed.
type Error struct {
	Model    string // LiteLLM model string
	Provider string
	APIBase  string
	Kind     string
	Status   int    // KindHTTP
	Field    string // KindSchema
	Attempts int
	Message  string
	Err      error
}

func (e *Error) Error() string {
	where := fmt.Sprintf("%s (%s at %s)", e.Model, e.Provider, e.APIBase)
	var what string
	switch e.Kind {
	case KindHTTP:
		what = fmt.Sprintf("HTTP %d", e.Status)
	case KindTimeout:
		what = "timed out"
	case KindNetwork:
		what = "unreachable"
	case KindMalformed:
		what = "malformed answer"
	case KindSchema:
		what = "answer failed validation"
		if e.Field != "" {
			what += " at field " + e.Field
		}
	}
	return fmt.Sprintf("%s: %s after %d attempt(s): %s", where, what, e.Attempts, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// Retryable reports whether a later identical call may succeed.
func (e *Error) Retryable() bool {
	switch e.Kind {
	case KindTimeout, KindNetwork:
		return true
	case KindHTTP:
		return e.Status == http.StatusTooManyRequests || e.Status >= 500 || e.Status == http.StatusRequestTimeout
	}
	return false
}

// Call sends req and returns its validated JSON object. Transient failures
// are retried with backoff (honouring Retry-After); an answer that is not
// valid is asked for again RetryInvalid times; then the last failure is
// returned as an *Error. ctx cancels everything, including waits.
func (c *Client) Call(ctx context.Context, req Request) (Response, error) {
	var text string
	attempts, usage, err := c.retry(ctx, c.opts.RetryInvalid, func(ctx context.Context) (u Usage, err *Error) {
		text, u, err = c.attempt(ctx, c.request(req), &req)
		return u, err
	})
	if err != nil {
		return Response{Usage: usage, Attempts: attempts}, err
	}
	return Response{JSON: json.RawMessage(text), Usage: usage, Attempts: attempts}, nil
}

// retry runs attempt until it succeeds or fails for good, and returns how
// many attempts ran, their usage added up, and the last one's error (nil
// when it succeeded). Transient failures are retried with backoff
// (honouring Retry-After) up to MaxRetries times; an invalid answer
// (malformed, or not matching the schema) is asked for again up to
// retryInvalid times, at once.
func (c *Client) retry(ctx context.Context, retryInvalid int, attempt func(ctx context.Context) (Usage, *Error)) (int, Usage, *Error) {
	var usage Usage
	invalid := 0
	for n := 1; ; n++ {
		box := &retryAfterBox{}
		u, err := attempt(withRetryAfterBox(ctx, box))
		usage.Add(u)
		if err == nil {
			return n, usage, nil
		}
		err.Attempts = n
		if ctx.Err() != nil {
			err.Kind, err.Message = KindTimeout, "cancelled: "+ctx.Err().Error()
			return n, usage, err
		}
		var wait time.Duration
		switch {
		case err.Kind == KindMalformed || err.Kind == KindSchema:
			invalid++
			if invalid > retryInvalid {
				return n, usage, err
			}
		case err.Retryable() && n <= c.opts.MaxRetries:
			wait = c.backoff(n)
			if ra, ok := box.get(); ok {
				wait = min(ra, c.opts.MaxRetryAfter)
			}
		default:
			return n, usage, err
		}
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				err.Kind, err.Message = KindTimeout, "cancelled while waiting to retry: "+err.Message
				return n, usage, err
			case <-t.C:
			}
		}
	}
}

func (c *Client) backoff(attempt int) time.Duration {
	d := c.opts.BaseBackoff << (attempt - 1)
	if d > c.opts.MaxBackoff || d <= 0 {
		d = c.opts.MaxBackoff
	}
	// Full jitter keeps many workers that failed together from retrying together.
	return d/2 + rand.N(d/2+1)
}

// useTools: Anthropic's OpenAI-compatible endpoint ignores response_format,
// so the schema is enforced there by forcing a call to a tool whose
// parameters are the schema.
func (c *Client) useTools() bool { return c.model.Provider == ProviderAnthropic }

// attempt is one request to the provider (send), holding a call slot.
func (c *Client) attempt(ctx context.Context, creq openai.ChatCompletionRequest, req *Request) (string, Usage, *Error) {
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		return "", Usage{}, c.fail(KindTimeout, 0, "", "cancelled while waiting for a free call slot", ctx.Err())
	}
	defer func() { <-c.sem }()
	start := time.Now()
	text, u, err := c.send(ctx, creq, req)
	c.observe(start, u, err)
	return text, u, err
}

// observe reports one provider request to the observer, if any.
func (c *Client) observe(start time.Time, u Usage, err *Error) {
	if c.opts.Observer == nil {
		return
	}
	var e error // a nil *Error must not become a non-nil error
	if err != nil {
		e = err
	}
	c.opts.Observer.LLMCall(c.model.String(), c.opts.Role, time.Since(start), u.InputTokens, u.OutputTokens, e)
}

// request is Call's chat completion request for req.
func (c *Client) request(req Request) openai.ChatCompletionRequest {
	msgs := []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleSystem, Content: req.Instructions}}
	if req.Context != "" {
		msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: req.Context})
	}
	msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: req.Input})
	creq := openai.ChatCompletionRequest{Model: c.model.Name, Messages: msgs, MaxTokens: req.MaxTokens}
	if c.useTools() {
		creq.Tools = []openai.Tool{{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name: req.Name, Description: "Record the answer.", Parameters: req.Schema}}}
		creq.ToolChoice = openai.ToolChoice{Type: openai.ToolTypeFunction, Function: openai.ToolFunction{Name: req.Name}}
	} else {
		creq.ResponseFormat = &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONSchema,
			JSONSchema: &openai.ChatCompletionResponseFormatJSONSchema{Name: req.Name, Schema: req.Schema, Strict: true}}
	}
	return creq
}

// send is one request to the provider, holding a call slot, and returns
// the answer's text, never empty. With req (Call) the text is the JSON
// object that passed req.Schema; without (Chat) it is the plain reply.
func (c *Client) send(ctx context.Context, creq openai.ChatCompletionRequest, req *Request) (string, Usage, *Error) {
	actx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	if reasoningModel(c.model.Name) && creq.MaxTokens > 0 {
		// Reasoning models refuse max_tokens, and their hidden reasoning
		// counts against the completion budget.
		creq.MaxTokens, creq.MaxCompletionTokens = 0, max(4*creq.MaxTokens, 8192)
	}
	resp, err := c.api.CreateChatCompletion(actx, creq)
	if err != nil {
		return "", Usage{}, c.classify(actx, err)
	}
	u := Usage{Calls: 1, InputTokens: resp.Usage.PromptTokens, OutputTokens: resp.Usage.CompletionTokens}
	if d := resp.Usage.PromptTokensDetails; d != nil {
		u.CachedTokens = d.CachedTokens
	}
	if len(resp.Choices) == 0 {
		return "", u, c.fail(KindMalformed, 0, "", "the answer has no choices", nil)
	}
	msg := resp.Choices[0].Message
	text := msg.Content
	if req != nil && (c.useTools() || text == "") {
		for _, tc := range msg.ToolCalls {
			if tc.Function.Name == req.Name {
				text = tc.Function.Arguments
				break
			}
		}
	}
	text = strings.TrimSpace(text)
	if text == "" {
		if msg.Refusal != "" {
			return "", u, c.fail(KindMalformed, 0, "", "the model refused: "+truncate(msg.Refusal, 200), nil)
		}
		return "", u, c.fail(KindMalformed, 0, "", "the answer is empty", nil)
	}
	if req == nil {
		return text, u, nil
	}
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		return "", u, c.fail(KindMalformed, 0, "", fmt.Sprintf("the answer is not JSON (%v): %s", err, truncate(text, 200)), err)
	}
	if req.Schema != nil {
		if err := req.Schema.Validate(v); err != nil {
			field := ""
			if ve, ok := errors.AsType[*ValidationError](err); ok {
				field = ve.Field
			}
			return "", u, c.fail(KindSchema, 0, field, err.Error(), err)
		}
	}
	return text, u, nil
}

// reasoningModel: OpenAI's reasoning families take max_completion_tokens.
func reasoningModel(name string) bool {
	return slices.ContainsFunc([]string{"o1", "o3", "o4", "gpt-5"}, func(p string) bool { return strings.HasPrefix(name, p) })
}

func (c *Client) fail(kind string, status int, field, msg string, err error) *Error {
	return &Error{Model: c.model.String(), Provider: c.model.Provider, APIBase: c.model.APIBase, Kind: kind,
		Status: status, Field: field, Message: msg, Err: err}
}

func (c *Client) classify(ctx context.Context, err error) *Error {
	var ae *openai.APIError
	var re *openai.RequestError
	var ne net.Error
	var se *json.SyntaxError
	switch {
	case errors.As(err, &ae):
		return c.fail(KindHTTP, ae.HTTPStatusCode, "", truncate(ae.Message, 300), err)
	case errors.As(err, &re):
		return c.fail(KindHTTP, re.HTTPStatusCode, "", truncate(strings.TrimSpace(string(re.Body)), 300), err)
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil, errors.As(err, &ne) && ne.Timeout():
		return c.fail(KindTimeout, 0, "", fmt.Sprintf("no answer within %s", c.opts.Timeout), err)
	case errors.As(err, &se), strings.Contains(err.Error(), "invalid character"),
		strings.Contains(err.Error(), "unexpected EOF") && !errors.As(err, &ne): // a body cut short, not a dropped connection
		return c.fail(KindMalformed, 0, "", "the response body is not a chat completion: "+err.Error(), err)
	}
	return c.fail(KindNetwork, 0, "", err.Error(), err)
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// retryAfterBox carries a response's Retry-After out of go-openai, whose
// errors do not expose headers.
type retryAfterBox struct {
	mu sync.Mutex
	d  time.Duration
	ok bool
}

func (b *retryAfterBox) set(d time.Duration) { b.mu.Lock(); b.d, b.ok = d, true; b.mu.Unlock() }
func (b *retryAfterBox) get() (time.Duration, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.d, b.ok
}

type boxKey struct{}

func withRetryAfterBox(ctx context.Context, b *retryAfterBox) context.Context {
	return context.WithValue(ctx, boxKey{}, b)
}

type retryAfterTransport struct{ inner http.RoundTripper }

func (t retryAfterTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.inner.RoundTrip(r)
	if err != nil || resp.StatusCode < 400 {
		return resp, err
	}
	if b, ok := r.Context().Value(boxKey{}).(*retryAfterBox); ok {
		if d, ok := ParseRetryAfter(resp.Header, time.Now()); ok {
			b.set(d)
		}
	}
	return resp, err
}

// ParseRetryAfter reads retry-after-ms (OpenAI) or Retry-After (seconds or
// an HTTP date).
func ParseRetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if ms := h.Get("Retry-After-Ms"); ms != "" {
		if f, err := strconv.ParseFloat(ms, 64); err == nil && f >= 0 {
			return time.Duration(f * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 {
		return time.Duration(f * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d, true
		}
		return 0, true
	}
	return 0, false
}
