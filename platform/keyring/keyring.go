// Package keyring keeps Critic's data keys for crypto-shredding: one random
// AES-256 key per scope (a trace: "trace/<id>"; an account's own content:
// AccountScope), stored in Postgres wrapped
// by the deployment's master key, destroyed when the scope is erased.
//
// Destroying a key is what "delete" means for an immutable log: the events,
// the Kafka segments and every backup keep their ciphertext, and none of it
// opens again. A destroyed scope keeps a tombstone row (destroyed_at), so a
// reader can tell "erased" from "never existed" and a new key is never made
// for it.
//
// Unwrapped keys are cached per process. A key destroyed by another process
// leaves this one's cache when this process reads the erasure's event
// (Forget, called by eventstore.Resolve for trace.erased and
// account.erased), which every API instance's read model does within its
// projection lag; the single-binary deployment destroys through the same
// Ring its consumers use.
package keyring

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/criticml/critic/platform/pg"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// KeySize is the size of the master key and of every data key (AES-256).
const KeySize = 32

// ErrDestroyed is a scope whose data key was destroyed.
var ErrDestroyed = errors.New("data key destroyed")

// maxCached bounds each of a ring's caches (unwrapped keys, destroyed
// scopes): about 20 MB of keys; past it the cache starts over.
const maxCached = 50_000

// AccountScope is the data-key scope of an account's own content (reward
// models, skills, guidelines, criteria, member names, trace sources): its
// streams are not a trace's, so they need a key of their own, destroyed when
// the account is erased (eventstore.Store.EraseAccountKey).
func AccountScope(ownerID string) string { return "account/" + ownerID }

// ErrNoKey is a scope that never had a data key.
var ErrNoKey = errors.New("no data key")

// Ring seals and opens payloads with per-scope data keys.
type Ring struct {
	pool        *pgxpool.Pool
	master      cipher.AEAD
	fingerprint []byte

	mu        sync.RWMutex
	keys      map[string]cipher.AEAD
	destroyed map[string]bool
}

// New returns a ring whose data keys are wrapped by master (KeySize bytes).
func New(pool *pgxpool.Pool, master []byte) (*Ring, error) {
	m, err := newAEAD(master)
	if err != nil {
		return nil, fmt.Errorf("master key: %w", err)
	}
	return &Ring{pool: pool, master: m, fingerprint: fingerprint(master), keys: map[string]cipher.AEAD{}, destroyed: map[string]bool{}}, nil
}

// fingerprint names a master key without revealing it: HMAC-SHA256 of a
// constant under the key.
func fingerprint(master []byte) []byte {
	h := hmac.New(sha256.New, master)
	h.Write([]byte("critic master key fingerprint v1"))
	return h.Sum(nil)
}

// CheckMaster compares the ring's master key with the fingerprint the
// database recorded, recording it when there is none yet: a process
// started with another key refuses to start (the error names
// CRITIC_MASTER_KEY_FILE) instead of making data keys no other process
// opens and failing later, event by event. A database whose data keys
// predate the fingerprint records it only if this key opens one of them.
func (r *Ring) CheckMaster(ctx context.Context) error {
	var recorded []byte
	err := r.pool.QueryRow(ctx, `SELECT fingerprint FROM master_key_fingerprint`).Scan(&recorded)
	if err == nil {
		if !hmac.Equal(recorded, r.fingerprint) {
			return fmt.Errorf("CRITIC_MASTER_KEY_FILE holds a master key other than the one this database's data keys are wrapped with "+
				"(fingerprint %x, recorded %x): start with that key file, or change keys with `critic keys rotate`", r.fingerprint[:6], recorded[:min(6, len(recorded))])
		}
		return nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("read master key fingerprint: %w", err)
	}
	var scope, id string
	var w []byte
	err = r.pool.QueryRow(ctx, `SELECT scope, key_id, wrapped FROM data_keys WHERE wrapped IS NOT NULL LIMIT 1`).Scan(&scope, &id, &w)
	if err == nil {
		if _, err := r.unwrap(scope, id, w); err != nil {
			return err
		}
	} else if !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("read data keys: %w", err)
	}
	if _, err := r.pool.Exec(ctx, `INSERT INTO master_key_fingerprint (fingerprint) VALUES ($1) ON CONFLICT (id) DO NOTHING`, r.fingerprint); err != nil {
		return fmt.Errorf("record master key fingerprint: %w", err)
	}
	return r.CheckMaster(ctx) // another process may have recorded its own first
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("must be %d bytes, got %d", KeySize, len(key))
	}
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}

// ReadMasterKey reads a master key file: 32 raw bytes, or their standard or
// URL-safe base64 (padded or not), surrounding whitespace ignored.
func ReadMasterKey(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("CRITIC_MASTER_KEY_FILE: %w", err)
	}
	if len(b) == KeySize {
		return b, nil
	}
	s := strings.TrimSpace(string(b))
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if k, err := enc.DecodeString(s); err == nil && len(k) == KeySize {
			return k, nil
		}
	}
	return nil, fmt.Errorf("CRITIC_MASTER_KEY_FILE %s: want %d random bytes, raw or base64", path, KeySize)
}

// CreateMasterKeyFile writes a new random master key (base64, mode 0600) to
// path unless a file is already there; it returns the key in the file.
func CreateMasterKeyFile(path string) ([]byte, error) {
	if _, err := os.Stat(path); err == nil {
		return ReadMasterKey(path)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	k := make([]byte, KeySize)
	_, _ = rand.Read(k)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) { // another process won the race
		return ReadMasterKey(path)
	}
	if err != nil {
		return nil, err
	}
	if _, err := f.WriteString(base64.StdEncoding.EncodeToString(k) + "\n"); err != nil {
		f.Close()
		return nil, err
	}
	return k, f.Close()
}

// Seal encrypts plain under scope's data key (made on first use) with aad
// bound to it; it returns the nonce and the ciphertext. A destroyed scope is
// ErrDestroyed: nothing new is written under an erased key.
func (r *Ring) Seal(ctx context.Context, scope string, plain, aad []byte) (nonce, ciphertext []byte, err error) {
	keys, err := r.Ensure(ctx, []string{scope})
	if err != nil {
		return nil, nil, err
	}
	k := keys[scope]
	if k == nil {
		return nil, nil, fmt.Errorf("scope %s: %w", scope, ErrDestroyed)
	}
	nonce = make([]byte, k.NonceSize())
	_, _ = rand.Read(nonce)
	return nonce, k.Seal(nil, nonce, plain, aad), nil
}

// Open decrypts what Seal returned. A destroyed scope is ErrDestroyed; a
// scope that never had a key, or a ciphertext that fails authentication,
// is another error.
func (r *Ring) Open(ctx context.Context, scope string, nonce, ciphertext, aad []byte) ([]byte, error) {
	k, err := r.load(ctx, scope)
	if err != nil {
		return nil, err
	}
	if len(nonce) != k.NonceSize() {
		return nil, fmt.Errorf("scope %s: nonce of %d bytes", scope, len(nonce))
	}
	plain, err := k.Open(nil, nonce, ciphertext, aad)
	if err != nil {
		return nil, fmt.Errorf("scope %s: ciphertext fails authentication: %w", scope, err)
	}
	return plain, nil
}

// Ensure returns the data keys of scopes, creating the missing ones in one
// statement; a destroyed scope maps to nil. Appends call it once per batch.
func (r *Ring) Ensure(ctx context.Context, scopes []string) (map[string]cipher.AEAD, error) {
	out := make(map[string]cipher.AEAD, len(scopes))
	var missing []string
	seen := make(map[string]bool, len(scopes))
	r.mu.RLock()
	for _, s := range scopes {
		if seen[s] {
			continue
		}
		seen[s] = true
		if k, ok := r.keys[s]; ok {
			out[s] = k
		} else if r.destroyed[s] {
			out[s] = nil
		} else {
			missing = append(missing, s)
		}
	}
	r.mu.RUnlock()
	if len(missing) == 0 {
		return out, nil
	}
	ids := make([]string, len(missing))
	wrapped := make([][]byte, len(missing))
	raws := make(map[string][]byte, len(missing))
	for i, s := range missing {
		raw := make([]byte, KeySize)
		_, _ = rand.Read(raw)
		raws[s] = raw
		ids[i] = uuid.NewString()
		wrapped[i] = r.wrap(s, ids[i], raw)
	}
	// The keys this insert made come back by RETURNING and need no read;
	// only scopes another writer made (or destroyed) first are read.
	rows, err := r.pool.Query(ctx, `INSERT INTO data_keys (scope, key_id, wrapped)
		SELECT * FROM unnest($1::text[], $2::text[], $3::bytea[]) ON CONFLICT (scope) DO NOTHING RETURNING scope`, missing, ids, wrapped)
	if err != nil {
		return nil, fmt.Errorf("create data keys: %w", err)
	}
	made, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("create data keys: %w", err)
	}
	r.mu.Lock()
	if len(r.keys)+len(made) > maxCached {
		r.keys = map[string]cipher.AEAD{}
	}
	for _, s := range made {
		k, err := newAEAD(raws[s])
		if err != nil {
			r.mu.Unlock()
			return nil, err
		}
		r.keys[s] = k
		out[s] = k
	}
	r.mu.Unlock()
	if len(made) == len(missing) {
		return out, nil
	}
	rest := slices.DeleteFunc(missing, func(s string) bool {
		_, ok := out[s]
		return ok
	})
	if err := r.fetch(ctx, rest, out); err != nil {
		return nil, err
	}
	return out, nil
}

// load returns scope's data key without creating one.
func (r *Ring) load(ctx context.Context, scope string) (cipher.AEAD, error) {
	r.mu.RLock()
	k, ok := r.keys[scope]
	gone := r.destroyed[scope]
	r.mu.RUnlock()
	if ok {
		return k, nil
	}
	if gone {
		return nil, fmt.Errorf("scope %s: %w", scope, ErrDestroyed)
	}
	out := map[string]cipher.AEAD{}
	if err := r.fetch(ctx, []string{scope}, out); err != nil {
		return nil, err
	}
	k, ok = out[scope]
	if !ok {
		return nil, fmt.Errorf("scope %s: %w", scope, ErrNoKey)
	}
	if k == nil {
		return nil, fmt.Errorf("scope %s: %w", scope, ErrDestroyed)
	}
	return k, nil
}

// fetch reads and unwraps the keys of scopes into out (nil for destroyed
// ones; absent scopes stay absent) and caches them.
func (r *Ring) fetch(ctx context.Context, scopes []string, out map[string]cipher.AEAD) error {
	rows, err := r.pool.Query(ctx, `SELECT scope, key_id, wrapped FROM data_keys WHERE scope = ANY($1)`, scopes)
	if err != nil {
		return fmt.Errorf("read data keys: %w", err)
	}
	type row struct {
		scope, id string
		wrapped   []byte
	}
	got, err := pgx.CollectRows(rows, func(rw pgx.CollectableRow) (row, error) {
		var x row
		return x, rw.Scan(&x.scope, &x.id, &x.wrapped)
	})
	if err != nil {
		return fmt.Errorf("read data keys: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.keys)+len(got) > maxCached {
		r.keys = map[string]cipher.AEAD{} // bounded: start over rather than grow with the log
	}
	if len(r.destroyed)+len(got) > maxCached {
		r.destroyed = map[string]bool{}
	}
	for _, x := range got {
		if x.wrapped == nil {
			r.destroyed[x.scope] = true
			out[x.scope] = nil
			continue
		}
		raw, err := r.unwrap(x.scope, x.id, x.wrapped)
		if err != nil {
			return err
		}
		k, err := newAEAD(raw)
		if err != nil {
			return fmt.Errorf("data key of %s: %w", x.scope, err)
		}
		r.keys[x.scope] = k
		out[x.scope] = k
	}
	return nil
}

// Destroyed says whether scope's data key was destroyed.
func (r *Ring) Destroyed(ctx context.Context, scope string) (bool, error) {
	_, err := r.load(ctx, scope)
	if errors.Is(err, ErrDestroyed) {
		return true, nil
	}
	if errors.Is(err, ErrNoKey) {
		return false, nil
	}
	return false, err
}

// Destroy erases scope's data key: the wrapped key is deleted and a
// tombstone (destroyed_at) stays. Destroying a scope that never had a key
// leaves a tombstone too, so no key is ever made for it later.
func (r *Ring) Destroy(ctx context.Context, scope string) error {
	if _, err := r.pool.Exec(ctx, `INSERT INTO data_keys (scope, key_id, wrapped, destroyed_at) VALUES ($1, '', NULL, now())
		ON CONFLICT (scope) DO UPDATE SET wrapped = NULL, destroyed_at = COALESCE(data_keys.destroyed_at, now())`, scope); err != nil {
		return fmt.Errorf("destroy data key of %s: %w", scope, err)
	}
	r.Forget(scope)
	return nil
}

// Forget drops scope's key from this process's cache and treats the scope as
// destroyed here from now on: the log said it was erased (another process
// may have destroyed the key, or is about to), so nothing in this process
// opens its content again, even before the database row is gone.
func (r *Ring) Forget(scope string) {
	r.mu.Lock()
	delete(r.keys, scope)
	if len(r.destroyed) >= maxCached {
		r.destroyed = map[string]bool{}
	}
	r.destroyed[scope] = true
	r.mu.Unlock()
}

// Rotate re-wraps every live data key with next, in one transaction that
// also records next's fingerprint, and returns how many it re-wrapped. The
// ring keeps using its old master key: processes must restart with the new
// key file once Rotate returned.
func (r *Ring) Rotate(ctx context.Context, next []byte) (int, error) {
	nm, err := newAEAD(next)
	if err != nil {
		return 0, fmt.Errorf("new master key: %w", err)
	}
	n := 0
	err = pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		var scopes, ids []string
		var rewrapped [][]byte
		var scope, id string
		var w []byte
		if err := pg.Each(ctx, tx, []any{&scope, &id, &w}, func() error {
			raw, err := r.unwrap(scope, id, w)
			if err != nil {
				return err
			}
			scopes, ids = append(scopes, scope), append(ids, id)
			rewrapped = append(rewrapped, seal(nm, raw, []byte(scope+"\x00"+id)))
			return nil
		}, `SELECT scope, key_id, wrapped FROM data_keys WHERE wrapped IS NOT NULL FOR UPDATE`); err != nil {
			return err
		}
		n = len(scopes)
		if _, err = tx.Exec(ctx, `UPDATE data_keys d SET wrapped = u.w FROM unnest($1::text[], $2::bytea[]) AS u(s, w)
			WHERE d.scope = u.s AND d.wrapped IS NOT NULL`, scopes, rewrapped); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO master_key_fingerprint (fingerprint) VALUES ($1)
			ON CONFLICT (id) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, recorded_at = now()`, fingerprint(next))
		return err
	})
	return n, err
}

func (r *Ring) wrap(scope, id string, key []byte) []byte {
	return seal(r.master, key, []byte(scope+"\x00"+id))
}

func (r *Ring) unwrap(scope, id string, wrapped []byte) ([]byte, error) {
	ns := r.master.NonceSize()
	if len(wrapped) < ns {
		return nil, fmt.Errorf("data key of %s is truncated", scope)
	}
	k, err := r.master.Open(nil, wrapped[:ns], wrapped[ns:], []byte(scope+"\x00"+id))
	if err != nil {
		return nil, fmt.Errorf("data key of %s does not open with this master key (CRITIC_MASTER_KEY_FILE is not the key it was wrapped with)", scope)
	}
	return k, nil
}

// seal is nonce || AES-GCM(plain).
func seal(a cipher.AEAD, plain, aad []byte) []byte {
	nonce := make([]byte, a.NonceSize())
	_, _ = rand.Read(nonce)
	return a.Seal(nonce, nonce, plain, aad)
}
