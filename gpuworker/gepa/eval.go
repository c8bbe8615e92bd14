package gepa

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"sync"

	"github.com/criticml/critic/platform/llm"
)

// evaluate runs the task model with body on exs[ids...] concurrently and
// scores the replies in one batch. Each example is one metric call, charged
// before it is made, so the hard cap holds even when a call fails. A task
// model that rejects one request (a 4xx other than authentication or rate
// limiting, or an empty answer) scores that example 0 and keeps the error
// for reflection; any other task-model failure fails the run.
func (r *run) evaluate(ctx context.Context, body string, exs []Example, ids []int) ([]eval, error) {
	if r.used+len(ids) > r.cfg.MaxMetricCalls {
		return nil, fmt.Errorf("gepa: internal budget check failed (%d used + %d > %d)", r.used, len(ids), r.cfg.MaxMetricCalls)
	}
	r.used += len(ids)
	out := make([]eval, len(ids))
	errs := make([]error, len(ids))
	var firstMu sync.Mutex
	var first error // the failure that cancelled the others
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, r.cfg.Concurrency)
	var wg sync.WaitGroup
	for i, k := range ids {
		wg.Go(func() {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				errs[i] = ctx.Err()
				return
			}
			defer func() { <-sem }()
			ex := exs[k]
			msgs := make([]llm.ChatMessage, 0, len(ex.Messages)+1)
			msgs = append(msgs, llm.ChatMessage{Role: "system", Content: SystemMessage(ex.System, r.id, body)})
			for _, m := range ex.Messages {
				msgs = append(msgs, chatMessage(m))
			}
			resp, err := r.cfg.Task.Chat(ctx, msgs, taskMaxTokens)
			switch {
			case err == nil:
				out[i].reply = resp.Text
			case rejectedRequest(err):
				out[i].errMsg = err.Error()
				r.logf("example %s: the task model rejected the request; it scores 0: %v", ex.TraceID, err)
			default:
				errs[i] = &TaskError{err}
				firstMu.Lock()
				if first == nil {
					first = errs[i]
				}
				firstMu.Unlock()
				cancel()
			}
		})
	}
	wg.Wait()
	if first != nil {
		return nil, first
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	var texts []string
	var at []int
	for i, k := range ids {
		if out[i].errMsg == "" {
			texts = append(texts, RenderReply(r.cfg.InputVersion, exs[k], out[i].reply))
			at = append(at, i)
		}
	}
	if len(texts) > 0 {
		scores, err := r.cfg.Scorer.Score(ctx, texts)
		if err != nil {
			return nil, fmt.Errorf("scoring with the reward model: %w", err)
		}
		if len(scores) != len(texts) {
			return nil, fmt.Errorf("scoring with the reward model: %d scores for %d texts", len(scores), len(texts))
		}
		for j, i := range at {
			if math.IsNaN(scores[j]) || math.IsInf(scores[j], 0) {
				return nil, fmt.Errorf("scoring with the reward model: example %s got a non-finite score", exs[ids[i]].TraceID)
			}
			out[i].score = scores[j]
		}
	}
	return out, nil
}

// rejectedRequest: the provider refused this one request (bad request, too
// long, content policy) or answered nothing; the run can go on without it.
// Authentication, permission, an unknown model (404), rate limits, server errors, timeouts and
// connection failures say the model is unusable, and fail the run.
func rejectedRequest(err error) bool {
	le, ok := errors.AsType[*llm.Error](err)
	if !ok {
		return false
	}
	switch le.Kind {
	case llm.KindMalformed:
		return true
	case llm.KindHTTP:
		switch {
		case le.Status == http.StatusUnauthorized, le.Status == http.StatusForbidden,
			le.Status == http.StatusTooManyRequests, le.Status == http.StatusRequestTimeout, le.Status == http.StatusNotFound:
			return false
		case le.Status >= 400 && le.Status < 500:
			return true
		}
	}
	return false
}

// chatMessage sends an input message as the provider accepts it: user and
// assistant as they are; any other role (a tool result before the first
// reply has no tool call to answer) as a user message naming the role.
func chatMessage(m Message) llm.ChatMessage {
	switch m.Role {
	case "user", "assistant":
		return llm.ChatMessage{Role: m.Role, Content: m.Content}
	}
	return llm.ChatMessage{Role: "user", Content: m.Role + ": " + m.Content}
}
