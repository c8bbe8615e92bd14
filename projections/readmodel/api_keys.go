package readmodel

import (
	"context"
	"time"

	"github.com/criticml/critic/platform/pg"
	"github.com/jackc/pgx/v5"
)

// APIKeyInfo is what an operator may see of a key: never the key or its
// hash. Prefix is empty for keys issued before prefixes were recorded.
type APIKeyInfo struct {
	KeyID     string
	UserID    string
	UserName  string
	Prefix    string
	ReadOnly  bool
	CreatedAt time.Time
	LastUsed  *time.Time
	RevokedAt *time.Time
	Revoked   bool
}

const apiKeyCols = `k.key_id::text, k.user_id::text, u.name, COALESCE(k.key_prefix, ''), k.read_only, k.created_at, g.last_used_at, k.revoked_at, k.revoked`

func (q *Queries) apiKeys(ctx context.Context, where string, args ...any) ([]APIKeyInfo, error) {
	return pg.Append(ctx, q.pool, []APIKeyInfo{}, func(r pgx.CollectableRow) (k APIKeyInfo, err error) {
		err = r.Scan(&k.KeyID, &k.UserID, &k.UserName, &k.Prefix, &k.ReadOnly, &k.CreatedAt, &k.LastUsed, &k.RevokedAt, &k.Revoked)
		k.CreatedAt = k.CreatedAt.UTC()
		for _, t := range []*time.Time{k.LastUsed, k.RevokedAt} {
			if t != nil {
				*t = t.UTC()
			}
		}
		return k, err
	}, `SELECT `+apiKeyCols+` FROM rm_api_keys k JOIN rm_users u ON u.id = k.user_id
		LEFT JOIN api_key_usage g ON g.key_id = k.key_id WHERE `+where+` ORDER BY k.created_at, k.key_id`, args...)
}

// APIKeys lists an account's keys, oldest first, revoked ones included.
func (q *Queries) APIKeys(ctx context.Context, userID string) ([]APIKeyInfo, error) {
	return q.apiKeys(ctx, `k.user_id = $1`, userID)
}

// FindAPIKeys returns the keys an operator's reference names: a key's
// listed prefix or the start of it (at least minRefLen characters), its key
// id, or the whole key (matched by hash). More than one match means the
// reference is ambiguous.
func (q *Queries) FindAPIKeys(ctx context.Context, ref, refHash string) ([]APIKeyInfo, error) {
	return q.apiKeys(ctx, `(k.key_hash = $2 OR k.key_id::text = $1
		OR (length($1) >= $3 AND starts_with(k.key_prefix, $1)))`,
		ref, refHash, minRefLen)
}

// minRefLen is the shortest prefix FindAPIKeys accepts ("critic_" and 4
// characters), so a typo cannot name every key.
const minRefLen = len("critic_") + 4

// RecordKeyUse notes that a key authenticated a request at t. It only moves
// forward, so instances with skewed clocks or late writes cannot move it back.
func (q *Queries) RecordKeyUse(ctx context.Context, keyID string, t time.Time) error {
	_, err := q.pool.Exec(ctx, `INSERT INTO api_key_usage (key_id, last_used_at) VALUES ($1, $2)
		ON CONFLICT (key_id) DO UPDATE SET last_used_at = GREATEST(api_key_usage.last_used_at, EXCLUDED.last_used_at)`, keyID, t)
	return err
}
