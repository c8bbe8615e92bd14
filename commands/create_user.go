package commands

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"regexp"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/members"
)

var userNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$`)

// CreateUserResult carries the new account and its API key, which is shown
// once: only its SHA-256 is stored.
type CreateUserResult struct {
	Result
	UserID string
	APIKey string
}

// CreateUser registers an account with a first API key. New accounts have
// reward models enabled (spec 001 "Rollout").
type CreateUser struct {
	Name        string
	ReadOnlyKey bool
}

// CreateUserHandler runs CreateUser.
type CreateUserHandler struct{ *Streams }

func (c CreateUserHandler) Handle(ctx context.Context, cmd CreateUser) (CreateUserResult, error) {
	if !userNamePattern.MatchString(cmd.Name) {
		return CreateUserResult{}, domain.Invalid("user name %q must be 1–64 letters, digits or _ . @ - and start with a letter or digit", cmd.Name)
	}
	userID := newID()
	key, hash := NewAPIKey()
	keyID := newID()
	evs := []events.New{
		{ID: newID(), Stream: events.UserNameStream(cmd.Name), OwnerID: userID, Type: events.UserNameClaimed,
			Payload: events.UserNameClaimedV1{UserID: userID, Name: cmd.Name}},
		{ID: newID(), Stream: events.UserStream(userID), OwnerID: userID, Type: events.UserCreated,
			Payload: events.UserCreatedV1{UserID: userID, Name: cmd.Name, RewardModelsEnabled: true}},
		// The account's first member is its admin, with the account's id
		// and name: the member an account created before members has
		// implicitly, so old and new accounts read the same.
		{ID: newID(), Stream: events.MembersStream(userID), OwnerID: userID, Type: events.MemberAdded,
			Payload: events.MemberAddedV1{MemberID: userID, Name: cmd.Name, Role: string(members.Admin)}},
		{ID: newID(), Stream: events.APIKeyStream(keyID), OwnerID: userID, Type: events.APIKeyIssued,
			Payload: events.APIKeyIssuedV1{KeyID: keyID, UserID: userID, KeyHash: hash, ReadOnly: cmd.ReadOnlyKey, KeyPrefix: APIKeyPrefix(key), MemberID: userID}},
	}
	r, err := c.append(ctx, Actor{}, map[string]int64{events.UserNameStream(cmd.Name): 0, events.UserStream(userID): 0,
		events.MembersStream(userID): 0, events.APIKeyStream(keyID): 0}, evs)
	if _, ok := errors.AsType[*domain.VersionConflictError](err); ok {
		return CreateUserResult{}, &domain.ConflictError{Code: "user_exists", Message: "a user named " + cmd.Name + " already exists (the name of an erased account stays reserved)"}
	}
	if err != nil {
		return CreateUserResult{}, err
	}
	return CreateUserResult{Result: r, UserID: userID, APIKey: key}, nil
}

// NewAPIKey returns a random 32-byte key (prefixed so leaked keys are
// recognisable) and the SHA-256 hex that is stored.
func NewAPIKey() (key, hash string) {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	key = "critic_" + base64.RawURLEncoding.EncodeToString(b)
	return key, HashAPIKey(key)
}

// apiKeyPrefixLen is how much of a key is kept to name it: "critic_" and 8
// random characters.
const apiKeyPrefixLen = len("critic_") + 8

// APIKeyPrefix is the part of a key that is stored and shown to name it
// (users list-keys, revoke-key); the rest is never stored.
func APIKeyPrefix(key string) string {
	if len(key) < apiKeyPrefixLen {
		return key
	}
	return key[:apiKeyPrefixLen]
}

// HashAPIKey is how keys are looked up: by SHA-256, never by value.
func HashAPIKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}
