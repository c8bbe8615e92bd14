package readmodel_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/projections/readmodel"
)

// TestRevokedKeyIsRefusedBeforeTheProjectionApplies: the read model still
// lists the key as active (its projection has not seen the revocation, as
// when it lags or an owner's events are parked), yet the key no longer
// authenticates; once applied, the listing shows the revocation.
func TestRevokedKeyIsRefusedBeforeTheProjectionApplies(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, blobs, store, cmds := newLog(t)
	p := readmodel.New(pool, blobs, slog.New(slog.NewTextHandler(io.Discard, nil)))
	q := readmodel.NewQueries(pool)
	apply := func() {
		all, err := store.ReadAfter(ctx, 0, 1000)
		require.NoError(t, err)
		require.NoError(t, p.Apply(ctx, all))
	}

	u, err := cmds.CreateUser.Handle(ctx, commands.CreateUser{Name: "revokee"})
	require.NoError(t, err)
	second, err := cmds.IssueAPIKey.Handle(ctx, commands.IssueAPIKey{UserID: u.UserID, ReadOnly: true})
	require.NoError(t, err)
	apply()
	c, err := q.CallerByKeyHash(ctx, commands.HashAPIKey(u.APIKey))
	require.NoError(t, err)
	require.Equal(t, u.UserID, c.UserID)

	keys, err := q.APIKeys(ctx, u.UserID)
	require.NoError(t, err)
	require.Len(t, keys, 2)
	require.Equal(t, commands.APIKeyPrefix(u.APIKey), keys[0].Prefix)
	require.Len(t, keys[0].Prefix, 15)
	require.False(t, keys[0].ReadOnly)
	require.True(t, keys[1].ReadOnly)
	require.Equal(t, c.KeyID, keys[0].KeyID)

	found, err := q.FindAPIKeys(ctx, keys[0].Prefix, commands.HashAPIKey(keys[0].Prefix))
	require.NoError(t, err)
	require.Len(t, found, 1)
	found, err = q.FindAPIKeys(ctx, u.APIKey, commands.HashAPIKey(u.APIKey))
	require.NoError(t, err)
	require.Len(t, found, 1, "the whole key names it too")
	found, err = q.FindAPIKeys(ctx, "critic_", commands.HashAPIKey("critic_"))
	require.NoError(t, err)
	require.Empty(t, found, "too short to name a key")

	_, err = cmds.RevokeAPIKey.Handle(ctx, commands.RevokeAPIKey{KeyID: c.KeyID})
	require.NoError(t, err)
	// Not applied yet: the read model still says active …
	keys, err = q.APIKeys(ctx, u.UserID)
	require.NoError(t, err)
	require.False(t, keys[0].Revoked)
	// … but the key is refused, and the other key is not.
	_, err = q.CallerByKeyHash(ctx, commands.HashAPIKey(u.APIKey))
	var unauth *domain.UnauthorizedError
	require.ErrorAs(t, err, &unauth)
	_, err = q.CallerByKeyHash(ctx, commands.HashAPIKey(second.APIKey))
	require.NoError(t, err)

	apply()
	keys, err = q.APIKeys(ctx, u.UserID)
	require.NoError(t, err)
	require.True(t, keys[0].Revoked)
	require.NotNil(t, keys[0].RevokedAt)
	_, err = cmds.RevokeAPIKey.Handle(ctx, commands.RevokeAPIKey{KeyID: c.KeyID})
	var conflict *domain.ConflictError
	require.ErrorAs(t, err, &conflict)

	// Last use only moves forward.
	t1 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	require.NoError(t, q.RecordKeyUse(ctx, keys[1].KeyID, t1))
	require.NoError(t, q.RecordKeyUse(ctx, keys[1].KeyID, t1.Add(-time.Hour)))
	keys, err = q.APIKeys(ctx, u.UserID)
	require.NoError(t, err)
	require.Equal(t, t1, *keys[1].LastUsed)
}
