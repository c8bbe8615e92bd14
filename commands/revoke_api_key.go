package commands

import (
	"context"
	"slices"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
)

// RevokeAPIKey disables a key for good (api_key.revoked). The key's own
// stream decides: a key never issued is not found, a revoked one is a
// conflict, so revoking twice appends nothing.
type RevokeAPIKey struct {
	KeyID string
}

// RevokeAPIKeyHandler runs RevokeAPIKey.
type RevokeAPIKeyHandler struct{ *Streams }

func (c RevokeAPIKeyHandler) Handle(ctx context.Context, cmd RevokeAPIKey) (Result, error) {
	return retryOnConflict(func() (Result, error) { return c.revokeAPIKey(ctx, cmd.KeyID) })
}

func (c *Streams) revokeAPIKey(ctx context.Context, keyID string) (Result, error) {
	stream := events.APIKeyStream(keyID)
	evs, err := c.loadStream(ctx, stream)
	if err != nil {
		return Result{}, err
	}
	if len(evs) == 0 || evs[0].Type != events.APIKeyIssued {
		return Result{}, domain.NotFound("API key", keyID)
	}
	var issued events.APIKeyIssuedV1
	if err := evs[0].Decode(&issued); err != nil {
		return Result{}, err
	}
	if slices.ContainsFunc(evs[1:], func(e events.Envelope) bool { return e.Type == events.APIKeyRevoked }) {
		return Result{}, &domain.ConflictError{Code: "already_revoked", Message: "API key " + keyID + " is already revoked"}
	}
	return c.appendEvent(ctx, Actor{}, stream, issued.UserID, evs[len(evs)-1].Version, events.APIKeyRevoked,
		events.APIKeyRevokedV1{KeyID: keyID, UserID: issued.UserID})
}
