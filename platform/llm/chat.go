package llm

import (
	"context"

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
	om := make([]openai.ChatCompletionMessage, len(msgs))
	for i, m := range msgs {
		om[i] = openai.ChatCompletionMessage{Role: m.Role, Content: m.Content}
	}
	creq := openai.ChatCompletionRequest{Model: c.model.Name, Messages: om, MaxTokens: maxTokens}
	var text string
	attempts, usage, err := c.retry(ctx, 0, func(ctx context.Context) (u Usage, err *Error) {
		text, u, err = c.attempt(ctx, creq, nil)
		return u, err
	})
	if err != nil {
		return ChatResponse{Usage: usage, Attempts: attempts}, err
	}
	return ChatResponse{Text: text, Usage: usage, Attempts: attempts}, nil
}
