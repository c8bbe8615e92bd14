package worker

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/platform/requestid"
)

// ErrNotClaimable matches (errors.Is) every 409 answer of the worker service:
// the job is not this worker's, or no longer queued/running — a duplicate or
// stale delivery, or a lost lease. The worker acknowledges and skips it.
var ErrNotClaimable = errors.New("not claimable")

// APIError is a non-2xx answer of the worker service ({"detail","code"}).
type APIError struct {
	Method, Path string
	Status       int
	Code, Detail string
}

func (e *APIError) Error() string {
	msg := fmt.Sprintf("%s %s: %d", e.Method, e.Path, e.Status)
	if e.Code != "" {
		msg += " " + e.Code
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// Is makes errors.Is(err, ErrNotClaimable) true for a 409, except a
// concurrent write (jobs.CodeConcurrentWrite: another write to the same
// stream won a race; the same request decides again on a retry).
func (e *APIError) Is(target error) bool {
	return target == ErrNotClaimable && e.Status == http.StatusConflict && e.Code != jobs.CodeConcurrentWrite
}

// Transient reports whether retrying the same request later may succeed: network
// errors, timeouts, 429, 5xx and a 409 concurrent write (and 401/403, which an
// operator fixes by correcting the token, not by dropping the job). Other 4xx
// answers are final.
func Transient(err error) bool {
	if err == nil {
		return false
	}
	if ae, ok := errors.AsType[*APIError](err); ok {
		switch {
		case ae.Status == http.StatusTooManyRequests, ae.Status >= 500, ae.Code == jobs.CodeConcurrentWrite,
			ae.Status == http.StatusUnauthorized, ae.Status == http.StatusForbidden:
			return true
		}
		return false
	}
	if errors.Is(err, context.Canceled) {
		return false
	}
	var ne net.Error
	var ue *url.Error
	return errors.As(err, &ne) || errors.As(err, &ue) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

// Client calls the API's worker service (/api/v1/worker/...) with a worker token.
//
// BaseURL may list several API instances, comma-separated
// (CRITIC_API_URL=http://api-1:8080,http://api-2:8080): a request that
// cannot reach one (a connection error, or 502/503/504 from a proxy in
// front of it) is sent to the next, and the client keeps using the
// instance that answered. Every instance serves the same worker service
// over the same event store, so any of them may take any call.
type Client struct {
	BaseURL  string // e.g. http://127.0.0.1:8080, or several, comma-separated
	Token    string // the worker token, sent as "Authorization: Bearer <token>"
	WorkerID string // sent as worker_id in every request
	HTTP     *http.Client

	cur atomic.Int32 // index into BaseURLs() of the instance that last answered
}

// NewClient returns a client with a 2-minute per-request timeout.
func NewClient(baseURL, token, workerID string) *Client {
	return &Client{BaseURL: strings.TrimRight(baseURL, "/"), Token: token, WorkerID: workerID,
		HTTP: &http.Client{Timeout: 2 * time.Minute}}
}

// BaseURLs is BaseURL split at commas: the API instances, in order.
func (c *Client) BaseURLs() []string {
	var out []string
	for u := range strings.SplitSeq(c.BaseURL, ",") {
		if u = strings.TrimRight(strings.TrimSpace(u), "/"); u != "" {
			out = append(out, u)
		}
	}
	return out
}

// Current is the API instance the client sends to first.
func (c *Client) Current() string {
	urls := c.BaseURLs()
	if len(urls) == 0 {
		return ""
	}
	return urls[int(c.cur.Load())%len(urls)]
}

// ErrTokenRefused is what Hello returns when the API answers 401 or 403:
// the worker's token is not the API's worker token. Retrying cannot help.
var ErrTokenRefused = errors.New("the API refused the worker token")

// Hello checks the address and the token (jobs.RouteHello): nil when an
// instance answered and accepted the token; an error wrapping
// ErrTokenRefused on 401/403; a Transient error when no instance answered.
func (c *Client) Hello(ctx context.Context) (*jobs.HelloAnswer, error) {
	var out jobs.HelloAnswer
	err := c.post(ctx, jobs.HelloPath(), jobs.Hello{WorkerID: c.WorkerID}, &out)
	if ae, ok := errors.AsType[*APIError](err); ok && (ae.Status == http.StatusUnauthorized || ae.Status == http.StatusForbidden) {
		return nil, fmt.Errorf("%w (%s answered %d): set CRITIC_WORKER_TOKEN to the token the API uses (its CRITIC_WORKER_TOKEN, or the worker_token file in its data directory)",
			ErrTokenRefused, c.Current(), ae.Status)
	}
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// claimNextTraining claims the oldest queued training attempt for this
// free worker; nil (and no error) when nothing is waiting. compute is
// where this worker runs ("worker", or "local" for the in-process one);
// report, when not nil, adds the worker's presence (device, bases).
func (c *Client) claimNextTraining(ctx context.Context, compute string, report func(*jobs.ClaimNextTraining)) (*jobs.TrainingClaim, error) {
	req := jobs.ClaimNextTraining{WorkerID: c.WorkerID, Compute: compute}
	if report != nil {
		report(&req)
	}
	var out jobs.NextTrainingClaim
	if err := c.post(ctx, jobs.ClaimNextPath(jobs.KindTrain), req, &out); err != nil {
		return nil, err
	}
	return out.Job, nil
}

// Job sends action about the job id of kind (jobs.RouteJob), naming this
// worker; out, when not nil, receives the answer. A 409 is ErrNotClaimable:
// the job is not (or no longer) this worker's.
func (c *Client) Job(ctx context.Context, kind jobs.Kind, id, action string, call jobs.Call, out any) error {
	call.WorkerID = c.WorkerID
	return c.post(ctx, jobs.JobPath(kind, id, action), call, out)
}

// post sends one call, failing over between the instances of BaseURL: it
// starts at the one that answered last and moves on when an instance
// cannot be reached or a proxy says it is down.
func (c *Client) post(ctx context.Context, path string, in, out any) error {
	data, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("POST %s: %w", path, err)
	}
	urls := c.BaseURLs()
	if len(urls) == 0 {
		return fmt.Errorf("POST %s: no API URL (CRITIC_API_URL)", path)
	}
	start := int(c.cur.Load()) % len(urls)
	for i := range urls {
		n := (start + i) % len(urls)
		err = c.postTo(ctx, urls[n], path, data, out)
		var ae *APIError
		down := err != nil && ctx.Err() == nil && (!errors.As(err, &ae) ||
			ae.Status == http.StatusBadGateway || ae.Status == http.StatusServiceUnavailable || ae.Status == http.StatusGatewayTimeout)
		if !down {
			if n != start {
				c.cur.Store(int32(n))
			}
			return err
		}
		if len(urls) > 1 {
			err = fmt.Errorf("%s: %w", urls[n], err)
		}
	}
	return err
}

func (c *Client) postTo(ctx context.Context, base, path string, data []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+path, bytes.NewReader(data))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.Token)
	if id := requestid.From(ctx); id != "" {
		// The events the API appends for this report keep the job's
		// correlation id (the request that caused the job).
		req.Header.Set(requestid.Header, id)
	}
	resp, err := cmp.Or(c.HTTP, http.DefaultClient).Do(req)
	if err != nil {
		return fmt.Errorf("POST %s: %w", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("POST %s: reading answer: %w", path, err)
	}
	if resp.StatusCode/100 != 2 {
		ae := &APIError{Method: http.MethodPost, Path: path, Status: resp.StatusCode}
		var e struct{ Detail, Code string }
		if json.Unmarshal(body, &e) == nil && (e.Detail != "" || e.Code != "") {
			ae.Detail, ae.Code = e.Detail, e.Code
		} else {
			ae.Detail = strings.TrimSpace(string(body[:min(len(body), 500)]))
		}
		return ae
	}
	if out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			return fmt.Errorf("POST %s: decoding answer: %w", path, err)
		}
	}
	return nil
}
