// Package client is the HTTP side of Critic's client commands (`critic
// login`, `import`, `sessions sync`, `hooks`): it talks to a Critic server
// over its public REST API only, so every client command works against a
// remote server and none needs database or broker access.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Client calls one Critic server with one API key.
type Client struct {
	BaseURL string // e.g. https://critic.example.com (no trailing slash)
	Key     string
	HTTP    *http.Client
}

// New returns a client for baseURL authenticated with key.
func New(baseURL, key string, timeout time.Duration) *Client {
	return &Client{
		BaseURL: strings.TrimRight(baseURL, "/"),
		Key:     key,
		HTTP:    &http.Client{Timeout: timeout},
	}
}

// APIError is an error answer of the server in its JSON error shape
// (`detail`, `code`, optional `line` and `field`).
type APIError struct {
	Status int
	Detail string `json:"detail"`
	Code   string `json:"code"`
	Line   int    `json:"line"`
	Field  string `json:"field"`
}

func (e *APIError) Error() string {
	if e.Detail == "" {
		return fmt.Sprintf("server answered %d", e.Status)
	}
	return e.Detail
}

// Message is the detail without the "line N: " and "field: " prefixes the
// server puts in front of it, so a caller can print its own (adjusted) line.
func (e *APIError) Message() string {
	msg := e.Detail
	if e.Line > 0 {
		msg = strings.TrimPrefix(msg, fmt.Sprintf("line %d: ", e.Line))
	}
	if e.Field != "" {
		msg = strings.TrimPrefix(msg, e.Field+": ")
	}
	return msg
}

// UnreachableError says the server could not be reached at all (connection
// refused, DNS, timeout): the hook queues the upload instead of failing.
type UnreachableError struct {
	URL string
	Err error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot reach the Critic server at %s: %v", e.URL, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// IsUnreachable reports whether err means the server was not reachable, or
// answered that it is unavailable (502/503/504): worth retrying later.
func IsUnreachable(err error) bool {
	if _, ok := errors.AsType[*UnreachableError](err); ok {
		return true
	}
	if a, ok := errors.AsType[*APIError](err); ok {
		return a.Status == http.StatusBadGateway || a.Status == http.StatusServiceUnavailable || a.Status == http.StatusGatewayTimeout
	}
	return false
}

// ImportResponse is the answer of POST /traces/import and /me/transcripts.
type ImportResponse struct {
	Format    string   `json:"format"`
	Imported  int      `json:"imported"`
	TraceIDs  []string `json:"trace_ids"`
	Unchanged int      `json:"unchanged"`
	// AnnotationsRemoved: step annotations the revisions removed because
	// their steps changed.
	AnnotationsRemoved int `json:"annotations_removed"`
	// Erased are the payload's traces the server left out because they
	// were erased before (an erased trace is not stored again).
	Erased []string `json:"erased"`
}

// ImportPath and TranscriptsPath are the two upload routes.
const (
	ImportPath      = "/api/v1/rm/traces/import"
	TranscriptsPath = "/api/v1/me/transcripts"
)

// Post sends an already encoded JSON body (see EncodeImport) to path and
// decodes the import answer.
func (c *Client) Post(ctx context.Context, path string, body []byte) (ImportResponse, error) {
	var out ImportResponse
	err := c.do(ctx, http.MethodPost, path, body, &out)
	return out, err
}

// Get reads a JSON resource into out.
func (c *Client) Get(ctx context.Context, path string, out any) error {
	return c.do(ctx, http.MethodGet, path, nil, out)
}

func (c *Client) do(ctx context.Context, method, path string, body []byte, out any) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+path, rd)
	if err != nil {
		return fmt.Errorf("bad server URL %q: %v", c.BaseURL, err)
	}
	if c.Key != "" {
		req.Header.Set("Authorization", "Bearer "+c.Key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &UnreachableError{URL: c.BaseURL, Err: err}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return &UnreachableError{URL: c.BaseURL, Err: err}
	}
	if resp.StatusCode/100 != 2 {
		ae := &APIError{Status: resp.StatusCode}
		if json.Unmarshal(raw, ae) != nil || ae.Detail == "" {
			ae.Detail = fmt.Sprintf("server answered %d %s", resp.StatusCode, strings.TrimSpace(string(raw[:min(len(raw), 300)])))
		}
		if resp.StatusCode == http.StatusUnauthorized {
			ae.Detail += " (check the API key: `critic login` or CRITIC_API_KEY)"
		}
		return ae
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("unexpected answer from %s%s: %v", c.BaseURL, path, err)
	}
	return nil
}
