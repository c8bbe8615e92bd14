package readmodel_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/members"
	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/platform/eventstore"
	"github.com/criticml/critic/platform/pg/pgtest"
	"github.com/criticml/critic/projections/readmodel"
)

// TestAnAccountFromBeforeMembersHasItsImplicitAdmin: a log recorded before
// members existed (user.created and an api_key.issued without member_id,
// no members stream) projects one admin member whose id is the account's
// and whose name is the account's, and its key authenticates as that
// admin — exactly what a new account records with member.added.
func TestAnAccountFromBeforeMembersHasItsImplicitAdmin(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	blobs, err := blob.NewLocal(t.TempDir())
	require.NoError(t, err)
	store := eventstore.New(pool, blobs)
	p := readmodel.New(pool, blobs, slog.New(slog.NewTextHandler(io.Discard, nil)))
	q := readmodel.NewQueries(pool)

	oldID, keyID := uuid.NewString(), uuid.NewString()
	key, hash := commands.NewAPIKey()
	_, err = store.Append(ctx, eventstore.Meta{Actor: "system"}, map[string]int64{events.UserStream(oldID): 0, events.APIKeyStream(keyID): 0}, []events.New{
		{ID: uuid.NewString(), Stream: events.UserStream(oldID), OwnerID: oldID, Type: events.UserCreated,
			Payload: events.UserCreatedV1{UserID: oldID, Name: "oldtimer", RewardModelsEnabled: true}},
		{ID: uuid.NewString(), Stream: events.APIKeyStream(keyID), OwnerID: oldID, Type: events.APIKeyIssued,
			Payload: map[string]any{"key_id": keyID, "user_id": oldID, "key_hash": hash, "read_only": false}},
	})
	require.NoError(t, err)
	fresh, err := commands.New(store).CreateUser.Handle(ctx, commands.CreateUser{Name: "newcomer"})
	require.NoError(t, err)
	all, err := store.ReadAfter(ctx, 0, 1000)
	require.NoError(t, err)
	require.NoError(t, p.Apply(ctx, all))

	for _, acct := range []struct{ id, name, key string }{{oldID, "oldtimer", key}, {fresh.UserID, "newcomer", fresh.APIKey}} {
		ms, err := q.Members(ctx, acct.id)
		require.NoError(t, err)
		require.Len(t, ms, 1, acct.name)
		require.Equal(t, acct.id, ms[0].ID)
		require.Equal(t, acct.name, ms[0].Name)
		require.Equal(t, members.Admin, ms[0].Role)
		require.False(t, ms[0].Removed)
		c, err := q.CallerByKeyHash(ctx, commands.HashAPIKey(acct.key))
		require.NoError(t, err)
		require.Equal(t, acct.id, c.MemberID)
		require.Equal(t, acct.name, c.MemberName)
		require.Equal(t, members.Admin, c.Role)
	}
	// The command side folds the old account the same way: the implicit
	// admin is its last admin.
	_, err = commands.New(store).RemoveMember.Handle(ctx, commands.RemoveMember{AccountID: oldID, By: oldID, MemberID: oldID})
	require.ErrorContains(t, err, "last admin")
}
