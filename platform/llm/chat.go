package llm

import (
	"context"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// ChatMessage is one message of a free-form conversation.
type ChatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// ChatResponse is a free-form answer.
type ChatResponse struct {
	Text     string
	Usage    Usage
	Attempts int
}

// Chat sends a conversation as it is and returns the model's plain-text
// reply. It exists for callers that replay an agent's own conversation
// (GEPA's task model) or want prose back (GEPA's reflection model), where a
// JSON schema would change what the model is asked to do. It shares Call's
// concurrency cap, deadlines and retry policy for 429, 5xx, timeouts and
// network failures; an empty reply is an *Error of KindMalformed (not
// retried: an empty answer is the model's answer).
func (c *Client) Chat(ctx context.Context, msgs []ChatMessage, maxTokens int) (ChatResponse, error) {
	var text string
	attempts, usage, err := c.retry(ctx, 0, func(ctx context.Context) (u Usage, err *Error) {
		text, u, err = c.chatAttempt(ctx, msgs, maxTokens)
		return u, err
	})
	if err != nil {
		return ChatResponse{Usage: usage, Attempts: attempts}, err
	}
	return ChatResponse{Text: text, Usage: usage, Attempts: attempts}, nil
}

func (c *Client) chatAttempt(ctx context.Context, msgs []ChatMessage, maxTokens int) (string, Usage, *Error) {
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		return "", Usage{}, c.fail(KindTimeout, 0, "", "cancelled while waiting for a free call slot", ctx.Err())
	}
	defer func() { <-c.sem }()
	start := time.Now()
	text, u, err := c.chatSend(ctx, msgs, maxTokens)
	c.observe(start, u, err)
	return text, u, err
}

// chatSend is one chat request to the provider, holding a call slot.
func (c *Client) chatSend(ctx context.Context, msgs []ChatMessage, maxTokens int) (string, Usage, *Error) {
	actx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	om := make([]openai.ChatCompletionMessage, len(msgs))
	for i, m := range msgs {
		om[i] = openai.ChatCompletionMessage{Role: m.Role, Content: m.Content}
	}
	creq := openai.ChatCompletionRequest{Model: c.model.Name, Messages: om, MaxTokens: maxTokens}
	if reasoningModel(c.model.Name) && maxTokens > 0 {
		creq.MaxTokens, creq.MaxCompletionTokens = 0, max(4*maxTokens, 8192)
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
	text := strings.TrimSpace(msg.Content)
	if text == "" {
		if msg.Refusal != "" {
			return "", u, c.fail(KindMalformed, 0, "", "the model refused: "+truncate(msg.Refusal, 200), nil)
		}
		return "", u, c.fail(KindMalformed, 0, "", "the answer is empty", nil)
	}
	return text, u, nil
}
