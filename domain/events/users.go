package events

// Event types of the user aggregate.
const (
	UserCreated                    = "user.created.v1"
	UserNameClaimed                = "user.name_claimed.v1"
	APIKeyIssued                   = "api_key.issued.v1"
	APIKeyRevoked                  = "api_key.revoked.v1"
	UserRewardModelsEnabledChanged = "user.reward_models_enabled_changed.v1"
)

// UserCreatedV1 registers an account. Every row Critic stores belongs to one.
type UserCreatedV1 struct {
	UserID              string `json:"user_id"`
	Name                string `json:"name"`
	RewardModelsEnabled bool   `json:"reward_models_enabled"`
}

// UserNameClaimedV1 reserves a user name. It is appended to the stream
// user_name/<name> at expected version 0, so two accounts can never share a
// name: the event store's version check is the uniqueness constraint.
type UserNameClaimedV1 struct {
	UserID string `json:"user_id"`
	Name   string `json:"name"`
}

// APIKeyIssuedV1 records a key by its SHA-256 only; the key itself is shown
// once and never stored. KeyPrefix is its first characters (the "critic_"
// marker and 8 of the 43 random ones, 48 bits), enough for an operator to
// recognise and revoke a key and useless for guessing it; keys issued before
// prefixes existed have none. MemberID is the member the key belongs to;
// keys issued before members existed have none and belong to the account's
// implicit admin (member id = user id).
type APIKeyIssuedV1 struct {
	KeyID     string `json:"key_id"`
	UserID    string `json:"user_id"`
	KeyHash   string `json:"key_hash"`
	ReadOnly  bool   `json:"read_only"`
	KeyPrefix string `json:"key_prefix,omitempty"`
	MemberID  string `json:"member_id,omitempty"`
}

// APIKeyRevokedV1 disables a key for good: every API instance refuses it
// from the moment the event is stored.
type APIKeyRevokedV1 struct {
	KeyID  string `json:"key_id"`
	UserID string `json:"user_id"`
}

// UserRewardModelsEnabledChangedV1 gates every /api/v1/rm route for an account
// without deleting its data.
type UserRewardModelsEnabledChangedV1 struct {
	UserID  string `json:"user_id"`
	Enabled bool   `json:"enabled"`
}
