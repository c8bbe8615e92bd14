package commands

import (
	"context"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
)

// IssueAPIKey adds a key to an existing account.
func (c *Commands) IssueAPIKey(ctx context.Context, userID string, readOnly bool) (CreateUserResult, error) {
	loaded, err := c.store.LoadStreams(ctx, []string{events.UserStream(userID)})
	if err != nil {
		return CreateUserResult{}, err
	}
	if len(loaded[events.UserStream(userID)]) == 0 {
		return CreateUserResult{}, domain.NotFound("user", userID)
	}
	key, hash := NewAPIKey()
	keyID := newID()
	r, err := c.append(ctx, Actor{}, map[string]int64{events.APIKeyStream(keyID): 0}, []events.New{{
		ID: newID(), Stream: events.APIKeyStream(keyID), OwnerID: userID, Type: events.APIKeyIssued,
		Payload: events.APIKeyIssuedV1{KeyID: keyID, UserID: userID, KeyHash: hash, ReadOnly: readOnly, KeyPrefix: APIKeyPrefix(key)},
	}})
	if err != nil {
		return CreateUserResult{}, err
	}
	return CreateUserResult{Result: r, UserID: userID, APIKey: key}, nil
}
