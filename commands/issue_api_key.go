package commands

import (
	"context"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
)

// IssueAPIKey adds a key to an existing account.
type IssueAPIKey struct {
	UserID   string
	ReadOnly bool
}

// IssueAPIKeyHandler runs IssueAPIKey.
type IssueAPIKeyHandler struct{ *Streams }

func (c IssueAPIKeyHandler) Handle(ctx context.Context, cmd IssueAPIKey) (CreateUserResult, error) {
	user, err := c.loadStream(ctx, events.UserStream(cmd.UserID))
	if err != nil {
		return CreateUserResult{}, err
	}
	if len(user) == 0 {
		return CreateUserResult{}, domain.NotFound("user", cmd.UserID)
	}
	key, hash := NewAPIKey()
	keyID := newID()
	r, err := c.appendEvent(ctx, Actor{}, events.APIKeyStream(keyID), cmd.UserID, 0, events.APIKeyIssued,
		events.APIKeyIssuedV1{KeyID: keyID, UserID: cmd.UserID, KeyHash: hash, ReadOnly: cmd.ReadOnly, KeyPrefix: APIKeyPrefix(key)})
	if err != nil {
		return CreateUserResult{}, err
	}
	return CreateUserResult{Result: r, UserID: cmd.UserID, APIKey: key}, nil
}
