// Package eventstore appends and reads Critic's immutable events in Postgres.
//
// Appends to several streams happen in one transaction with an expected
// version per stream, so a command's events are all stored or none, and a
// concurrent writer is a typed VersionConflictError, never a silent overwrite.
// Appends are serialized by a transaction-level advisory lock: sequence numbers
// are then assigned in commit order, which lets the relay tail the table by
// seq without ever skipping a row that commits late.
package eventstore

import (
	"context"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/klauspost/compress/s2"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/platform/keyring"
	"github.com/criticml/critic/platform/pg"
)

// MaxInlinePayload is the largest payload stored in the events row itself;
// larger ones go to the blob store (claim check) so Kafka messages stay
// under the broker's 1 MiB default.
const MaxInlinePayload = 512 << 10

// appendLockKey is the advisory lock that serializes appends.
const appendLockKey = 7_210_001

// NotifyChannel is the Postgres channel notified after every append, so the
// relay wakes without polling.
const NotifyChannel = "critic_events"

// Any as an expected version skips the check for that stream.
const Any int64 = -1

// Store is the Postgres event store.
type Store struct {
	pool  *pgxpool.Pool
	blobs blob.Store
	keys  *keyring.Ring
}

// Option configures a Store.
type Option func(*Store)

// WithKeyring seals the payloads of trace streams with their trace's data
// key (crypto-shredding, see Sealed). Without it payloads are stored in
// clear, as before encryption existed (CRITIC_ENCRYPTION=off).
func WithKeyring(k *keyring.Ring) Option { return func(s *Store) { s.keys = k } }

// New returns a store over pool; blobs holds payloads over MaxInlinePayload.
func New(pool *pgxpool.Pool, blobs blob.Store, opts ...Option) *Store {
	s := &Store{pool: pool, blobs: blobs}
	for _, o := range opts {
		o(s)
	}
	return s
}

// sealedScope is the data-key scope an event's payload is sealed under, or
// "" for a payload stored in clear. A trace's stream holds its content, its
// annotations, comments and quotes: all of it goes under the trace's key.
// The deletion and erasure facts stay in clear — they hold only ids, and a
// consumer must read them after the key is gone.
//
// An account's own streams that carry text its members wrote or that
// quotes them (accountSealed) go under the account's key. The streams auth
// reads to let a caller in (user/, user_name/, api_key/) stay in clear: they
// are read before any account key could be, hold a login name and a key
// hash rather than content, and account erasure tombstones them itself.
// Job and scoring streams hold ids, counts and blob keys; the deployment's
// own streams (SystemOwnerID) belong to no account.
func sealedScope(stream, typ, owner string) string {
	if strings.HasPrefix(stream, "trace/") {
		if typ == events.TraceDeleted || typ == events.TraceErased {
			return ""
		}
		return stream
	}
	if owner == "" || owner == events.SystemOwnerID {
		return ""
	}
	if slices.ContainsFunc(accountSealed, func(p string) bool { return strings.HasPrefix(stream, p) }) {
		return keyring.AccountScope(owner)
	}
	return ""
}

// accountSealed are the stream prefixes sealed with the owner's account key:
// reward models (names, configurations, learning reports), their scores
// (the model's name), skill optimization runs (SKILL.md text), guidelines,
// criteria, member display names and trace sources (names).
var accountSealed = []string{"reward_model/", "scores/", "gepa_run/", "guidelines/", "criteria/", "members/", "trace_source/"}

// quotedScope is the key scope of the trace an event on another stream
// quotes (events.TraceQuote), or "". Such a payload is sealed with that
// trace's key, its redacted form with the stream's: erasing the trace
// leaves the event readable without the quote.
func quotedScope(e events.New) string {
	q, ok := e.Payload.(events.TraceQuote)
	if !ok || strings.HasPrefix(e.Stream, "trace/") || sealedScope(e.Stream, e.Type, e.OwnerID) == "" || q.QuotedTrace() == "" {
		return ""
	}
	return events.TraceStream(q.QuotedTrace())
}

// sealWith seals raw (S2-compressed first) under k, the key of scope.
func sealWith(k cipher.AEAD, scope string, raw, aad []byte) *events.Sealed {
	nonce := make([]byte, k.NonceSize())
	_, _ = rand.Read(nonce)
	return &events.Sealed{Key: scope, Nonce: nonce, Ciphertext: k.Seal(nil, nonce, s2.Encode(nil, raw), aad), Compression: "s2"}
}

// sealPayload is raw, the JSON of e's payload, as the store keeps it: sealed
// with the key of e's scope (keys holds it, from Ensure) and, for a
// payload that quotes a trace, with that trace's key and a redacted copy
// under the stream's; raw unchanged when e's stream is stored in clear.
func (s *Store) sealPayload(keys map[string]cipher.AEAD, e events.New, raw []byte) ([]byte, error) {
	sc := sealedScope(e.Stream, e.Type, e.OwnerID)
	if sc == "" {
		return raw, nil
	}
	k := keys[sc]
	if k == nil {
		return nil, &events.ErasedError{EventID: e.ID, Type: e.Type, Stream: e.Stream, Key: sc}
	}
	aad := sealAAD(e.ID, e.Stream, e.Type)
	var sealed *events.Sealed
	if q := quotedScope(e); q == "" {
		sealed = sealWith(k, sc, raw, aad)
	} else {
		redacted, err := json.Marshal(e.Payload.(events.TraceQuote).Redacted())
		if err != nil {
			return nil, fmt.Errorf("encode %s payload: %w", e.Type, err)
		}
		if qk := keys[q]; qk == nil {
			// The quoted trace is erased already: only what
			// survives its erasure is written.
			sealed = sealWith(k, sc, redacted, aad)
		} else {
			sealed = sealWith(qk, q, raw, aad)
			sealed.Redacted = sealWith(k, sc, redacted, aad)
		}
	}
	return json.Marshal(events.SealedPayload{Sealed: sealed})
}

// sealAAD binds a sealed payload to its envelope.
func sealAAD(id, stream, typ string) []byte {
	return []byte(id + "\x00" + stream + "\x00" + typ)
}

// Meta says who caused an append and why.
type Meta struct {
	Actor         string
	CausationID   string
	CorrelationID string
}

// streamVersionsSQL reads each named stream's current version (streams
// with no events are absent). Each stream is its own backward index probe
// that stops at the first entry: max(version) … GROUP BY stream read every
// version of every stream, so an append to a long stream — a model's scores
// stream gains two events per scored trace — cost time in proportion to
// its length, and background scoring slowed as the account grew.
const streamVersionsSQL = `SELECT u.stream, e.version FROM unnest($1::text[]) AS u(stream)
	CROSS JOIN LATERAL (SELECT version FROM events WHERE events.stream = u.stream ORDER BY version DESC LIMIT 1) e`

// Append stores evs in one transaction. expected maps a stream to the version
// it must be at before the append (0 = the stream must be empty, Any = no
// check), whether or not evs write it; streams not in the map are not
// checked. Events of one stream get
// consecutive versions in slice order. It returns the stored envelopes.
func (s *Store) Append(ctx context.Context, meta Meta, expected map[string]int64, evs []events.New) ([]events.Envelope, error) {
	if len(evs) == 0 {
		return nil, nil
	}
	var keys map[string]cipher.AEAD
	if s.keys != nil {
		var scopes []string
		for _, e := range evs {
			if sc := sealedScope(e.Stream, e.Type, e.OwnerID); sc != "" && (len(scopes) == 0 || scopes[len(scopes)-1] != sc) {
				scopes = append(scopes, sc)
			}
			if q := quotedScope(e); q != "" {
				scopes = append(scopes, q)
			}
		}
		if len(scopes) > 0 {
			var err error
			if keys, err = s.keys.Ensure(ctx, scopes); err != nil {
				return nil, err
			}
		}
	}
	envs := make([]events.Envelope, len(evs))
	for i, e := range evs {
		raw, err := json.Marshal(e.Payload)
		if err != nil {
			return nil, fmt.Errorf("encode %s payload: %w", e.Type, err)
		}
		if keys != nil {
			if raw, err = s.sealPayload(keys, e, raw); err != nil {
				return nil, err
			}
		}
		if len(raw) > MaxInlinePayload {
			raw, err = s.claimCheckAt(ctx, "events/"+e.ID+".json", raw)
			if err != nil {
				return nil, err
			}
		}
		envs[i] = events.Envelope{ID: e.ID, Stream: e.Stream, OwnerID: e.OwnerID, Type: e.Type,
			Actor: meta.Actor, CausationID: meta.CausationID, CorrelationID: meta.CorrelationID, Payload: raw}
	}

	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// The lock and the transaction's time in one round trip (now() is
		// the transaction's start either way).
		var now time.Time
		if err := tx.QueryRow(ctx, "SELECT now() FROM pg_advisory_xact_lock($1)", appendLockKey).Scan(&now); err != nil {
			return err
		}
		// Every stream the append writes or the caller decided on: a
		// stream read and left as it was (an unchanged trace of an import)
		// is checked too, or it would read as empty and never match.
		streams := map[string]bool{}
		names := []string{}
		for _, e := range envs {
			if !streams[e.Stream] {
				streams[e.Stream] = true
				names = append(names, e.Stream)
			}
		}
		for st, want := range expected {
			if want != Any && !streams[st] {
				streams[st] = true
				names = append(names, st)
			}
		}
		current := make(map[string]int64, len(names))
		var st string
		var v int64
		if err := pg.Each(ctx, tx, []any{&st, &v}, func() error {
			current[st] = v
			return nil
		}, streamVersionsSQL, names); err != nil {
			return err
		}
		for st, want := range expected {
			if want != Any && current[st] != want {
				return &domain.VersionConflictError{Stream: st, Expected: want, Actual: current[st]}
			}
		}
		for i := range envs {
			current[envs[i].Stream]++
			envs[i].Version = current[envs[i].Stream]
			envs[i].RecordedAt = now
		}
		_, err := tx.CopyFrom(ctx, pgx.Identifier{"events"},
			[]string{"id", "stream", "version", "owner_id", "type", "actor", "causation_id", "correlation_id", "recorded_at", "payload"},
			pgx.CopyFromSlice(len(envs), func(i int) ([]any, error) {
				e := envs[i]
				return []any{pg.UUIDArg(e.ID), e.Stream, e.Version, pg.UUIDArg(e.OwnerID), e.Type, e.Actor, e.CausationID, e.CorrelationID, e.RecordedAt, string(e.Payload)}, nil
			}))
		if err != nil {
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) && pgErr.Code == "23505" {
				return &domain.VersionConflictError{Stream: "(concurrent append)", Expected: -1, Actual: -1}
			}
			return err
		}
		_, err = tx.Exec(ctx, "SELECT pg_notify($1, '')", NotifyChannel)
		return err
	})
	if err != nil {
		return nil, err
	}
	return envs, nil
}

// claimCheckAt stores raw as the blob key and returns the claim check that
// names it.
func (s *Store) claimCheckAt(ctx context.Context, key string, raw []byte) ([]byte, error) {
	sum := sha256.Sum256(raw)
	if err := s.blobs.Put(ctx, key, raw); err != nil {
		return nil, fmt.Errorf("store large payload: %w", err)
	}
	return json.Marshal(events.ClaimCheckPayload{ClaimCheck: &events.ClaimCheck{Key: key, SHA256: hex.EncodeToString(sum[:]), Size: int64(len(raw))}})
}

// Resolve turns a stored payload into the event's payload: a claim check is
// replaced with the blob it names, verifying its SHA-256, and a sealed
// payload is opened with keys. Plain inline payloads (and those of events
// stored before encryption) are returned unchanged. Every consumer calls it;
// an event whose data key was destroyed is an *events.ErasedError, which
// consumers skip: an erased event projects nothing.
func Resolve(ctx context.Context, blobs blob.Store, keys *keyring.Ring, e events.Envelope) (events.Envelope, error) {
	if keys != nil {
		// An erasure read here ends this process's use of the erased key,
		// wherever it was destroyed (keyring.Ring.Forget).
		switch e.Type {
		case events.TraceErased:
			keys.Forget(e.Stream)
		case events.AccountErased:
			keys.Forget(keyring.AccountScope(e.OwnerID))
		}
	}
	e, err := resolveClaimCheck(ctx, blobs, e)
	if errors.Is(err, blob.ErrNotFound) && keys != nil {
		// Erasure deletes a sealed trace's blobs with its key.
		if sc := sealedScope(e.Stream, e.Type, e.OwnerID); sc != "" {
			if gone, derr := keys.Destroyed(ctx, sc); derr == nil && gone {
				return e, &events.ErasedError{EventID: e.ID, Type: e.Type, Stream: e.Stream, Key: sc}
			}
		}
	}
	if err != nil || !events.IsSealed(e.Payload) {
		return e, err
	}
	sealed, err := decodeSealed(e.Payload)
	if err != nil {
		return e, &events.UnreadableError{EventID: e.ID, Type: e.Type, Stream: e.Stream, Err: fmt.Errorf("sealed payload: %v", err)}
	}
	if keys == nil {
		return e, fmt.Errorf("event %s is sealed and this process has no keyring (CRITIC_ENCRYPTION=off): set CRITIC_MASTER_KEY_FILE", e.ID)
	}
	plain, err := openSealed(ctx, keys, e, sealed)
	if IsErased(err) && sealed.Redacted != nil {
		// The quoted trace is erased: the event reads without the quote.
		plain, err = openSealed(ctx, keys, e, sealed.Redacted)
	}
	if err != nil {
		return e, err
	}
	e.Payload = plain
	return e, nil
}

// openSealed opens one sealed payload of e.
func openSealed(ctx context.Context, keys *keyring.Ring, e events.Envelope, s *events.Sealed) ([]byte, error) {
	plain, err := keys.Open(ctx, s.Key, s.Nonce, s.Ciphertext, sealAAD(e.ID, e.Stream, e.Type))
	if errors.Is(err, keyring.ErrDestroyed) {
		return nil, &events.ErasedError{EventID: e.ID, Type: e.Type, Stream: e.Stream, Key: s.Key}
	}
	if err != nil {
		return nil, fmt.Errorf("event %s: %w", e.ID, err)
	}
	switch s.Compression {
	case "":
	case "s2":
		if plain, err = s2.Decode(nil, plain); err != nil {
			return nil, &events.UnreadableError{EventID: e.ID, Type: e.Type, Stream: e.Stream, Err: fmt.Errorf("sealed payload: %w", err)}
		}
	default:
		return nil, &events.UnreadableError{EventID: e.ID, Type: e.Type, Stream: e.Stream, Err: fmt.Errorf("sealed payload: unknown compression %q", s.Compression)}
	}
	return plain, nil
}

// IsErased says whether err is an event whose data key was destroyed.
func IsErased(err error) bool {
	var ee *events.ErasedError
	return errors.As(err, &ee)
}

// Open is Resolve with the store's blob store and keyring.
func (s *Store) Open(ctx context.Context, e events.Envelope) (events.Envelope, error) {
	return Resolve(ctx, s.blobs, s.keys, e)
}

// Keyring is the store's keyring, nil when payloads are stored in clear.
func (s *Store) Keyring() *keyring.Ring {
	if s == nil {
		return nil
	}
	return s.keys
}

// EraseStream crypto-shreds a trace stream: its data key is destroyed (every
// sealed payload of it, wherever a copy lives, stops opening) and the blobs
// its events were claim-checked to are deleted. Events stored before
// encryption stay readable in the log until `critic keys seal-existing`
// (SealExisting) seals them: see docs/operations.md.
func (s *Store) EraseStream(ctx context.Context, stream string) error {
	envs, err := s.envelopes(ctx, "SELECT "+selectCols+" FROM events WHERE stream = $1 ORDER BY version", stream)
	if err != nil {
		return err
	}
	if s.keys != nil {
		if err := s.keys.Destroy(ctx, stream); err != nil {
			return err
		}
	}
	return s.deleteBlobs(ctx, envs, "erase "+stream)
}

// EraseAccountKey crypto-shreds an account's own content: the account's data
// key (keyring.AccountScope) is destroyed, so every payload sealed with it —
// reward models and their learning reports, skills, guidelines, criteria,
// member names, trace sources — stops opening in the log, in Kafka and in
// backups, and the blobs such events were claim-checked to are deleted.
// Account erasure calls it after it has erased the account's traces
// (EraseStream each); the streams auth reads (user/, user_name/, api_key/)
// are not sealed and are the erasure's to tombstone. Erasing an account
// that never had a key leaves a tombstone, so none is made later.
func (s *Store) EraseAccountKey(ctx context.Context, ownerID string) error {
	if s.keys == nil {
		return nil
	}
	scope := keyring.AccountScope(ownerID)
	if err := s.keys.Destroy(ctx, scope); err != nil {
		return err
	}
	envs, err := s.envelopes(ctx, "SELECT "+selectCols+` FROM events WHERE owner_id = $1 AND NOT starts_with(stream, 'trace/')
		AND payload ? 'claim_check'`, pg.UUIDArg(ownerID))
	if err != nil {
		return err
	}
	envs = slices.DeleteFunc(envs, func(e events.Envelope) bool { return sealedScope(e.Stream, e.Type, e.OwnerID) != scope })
	return s.deleteBlobs(ctx, envs, "erase account "+ownerID)
}

// deleteBlobs deletes the blobs envs were claim-checked to; what names the
// erasure in errors.
func (s *Store) deleteBlobs(ctx context.Context, envs []events.Envelope, what string) error {
	for _, e := range envs {
		if cc := claimCheckOf(e.Payload); cc != nil {
			if err := s.blobs.Delete(ctx, cc.Key); err != nil && !errors.Is(err, blob.ErrNotFound) {
				return fmt.Errorf("%s: delete blob %s: %w", what, cc.Key, err)
			}
		}
	}
	return nil
}

// IsClaimCheck says whether a stored payload is a claim check, by how it
// begins: cheap enough for a consumer to test every event.
func IsClaimCheck(payload []byte) bool { return events.StartsWithObject(payload, "claim_check") }

// claimCheckOf is the claim check a stored payload is, or nil.
func claimCheckOf(payload []byte) *events.ClaimCheck {
	if len(payload) == 0 || len(payload) > 1024 || !json.Valid(payload) {
		return nil
	}
	var cc events.ClaimCheckPayload
	if json.Unmarshal(payload, &cc) != nil {
		return nil
	}
	return cc.ClaimCheck
}

func resolveClaimCheck(ctx context.Context, blobs blob.Store, e events.Envelope) (events.Envelope, error) {
	cc := claimCheckOf(e.Payload)
	if cc == nil {
		return e, nil
	}
	raw, err := blobs.Get(ctx, cc.Key)
	if errors.Is(err, blob.ErrNotFound) {
		// Gone, not unreachable: retrying will not bring it back.
		return e, &events.UnreadableError{EventID: e.ID, Type: e.Type, Stream: e.Stream, Err: fmt.Errorf("fetch claim-checked payload: %w", err)}
	}
	if err != nil {
		return e, fmt.Errorf("event %s: fetch claim-checked payload: %w", e.ID, err)
	}
	sum := sha256.Sum256(raw)
	if hex.EncodeToString(sum[:]) != cc.SHA256 {
		return e, &events.UnreadableError{EventID: e.ID, Type: e.Type, Stream: e.Stream,
			Err: fmt.Errorf("claim-checked payload %s fails its SHA-256 check", cc.Key)}
	}
	e.Payload = raw
	return e, nil
}

const selectCols = "seq, id, stream, version, owner_id, type, actor, causation_id, correlation_id, recorded_at, payload"

func scanEnvelope(rows pgx.CollectableRow) (events.Envelope, error) {
	var e events.Envelope
	var payload []byte
	err := rows.Scan(&e.Seq, &e.ID, &e.Stream, &e.Version, &e.OwnerID, &e.Type, &e.Actor, &e.CausationID, &e.CorrelationID, &e.RecordedAt, &payload)
	e.Payload = payload
	e.RecordedAt = e.RecordedAt.UTC()
	return e, err
}

// LoadStreams returns the events of each named stream in version order, with
// claim checks resolved. Streams with no events are absent from the map.
func (s *Store) LoadStreams(ctx context.Context, streams []string) (map[string][]events.Envelope, error) {
	return s.LoadStreamsAsOf(ctx, streams, 0)
}

// LoadStreamsAsOf is LoadStreams cut at a log position: only events with
// seq <= asOf (asOf 0 = everything). Replaying a stream as of a past event is
// how a dataset is rebuilt exactly as it was built.
func (s *Store) LoadStreamsAsOf(ctx context.Context, streams []string, asOf int64) (map[string][]events.Envelope, error) {
	out := map[string][]events.Envelope{}
	if len(streams) == 0 {
		return out, nil
	}
	err := s.eachResolved(ctx, func(e events.Envelope) { out[e.Stream] = append(out[e.Stream], e) },
		"SELECT "+selectCols+" FROM events WHERE stream = ANY($1) AND ($2 = 0 OR seq <= $2) ORDER BY stream, version", streams, asOf)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// LoadStreamsAfter is LoadStreams for a reader that holds some of the
// streams folded already: a stream named in after yields only its events
// past that version (absent: all of them).
func (s *Store) LoadStreamsAfter(ctx context.Context, streams []string, after map[string]int64) (map[string][]events.Envelope, error) {
	out := map[string][]events.Envelope{}
	if len(streams) == 0 {
		return out, nil
	}
	versions := make([]int64, len(streams))
	for i, st := range streams {
		versions[i] = after[st]
	}
	err := s.eachResolved(ctx, func(e events.Envelope) { out[e.Stream] = append(out[e.Stream], e) },
		// Each stream its own index range scan (LATERAL), whatever the
		// planner would estimate for a join.
		"SELECT "+selectCols+" FROM unnest($1::text[], $2::bigint[]) AS a(name, after) CROSS JOIN LATERAL (SELECT "+selectCols+
			" FROM events WHERE stream = a.name AND version > a.after) e ORDER BY stream, version",
		streams, versions)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// OwnerStreams lists an owner's streams whose name starts with prefix and
// that had events at or before asOf (0 = now), in first-event order.
func (s *Store) OwnerStreams(ctx context.Context, owner, prefix string, asOf int64) ([]string, error) {
	return pg.Append(ctx, s.pool, nil, pgx.RowTo[string], `SELECT stream FROM events WHERE owner_id = $1 AND starts_with(stream, $2) AND ($3 = 0 OR seq <= $3)
		GROUP BY stream ORDER BY min(seq)`, owner, prefix, asOf)
}

// ReadAfter returns up to limit events with seq > after, in seq order, with
// payloads as stored (claim checks unresolved: the relay forwards them as is).
func (s *Store) ReadAfter(ctx context.Context, after int64, limit int) ([]events.Envelope, error) {
	return s.envelopes(ctx, "SELECT "+selectCols+" FROM events WHERE seq > $1 ORDER BY seq LIMIT $2", after, limit)
}

// Count returns the number of stored events (tests check that bad input
// leaves it unchanged).
func (s *Store) Count(ctx context.Context) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, "SELECT count(*) FROM events").Scan(&n)
	return n, err
}

// Pool exposes the pool for components that share the database (relay cursor).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Blobs exposes the blob store consumers use to resolve claim checks.
func (s *Store) Blobs() blob.Store { return s.blobs }

// ReadByID returns one event as stored (claim check unresolved), or
// pgx.ErrNoRows. A projection retrying an event it parked reads it here: the
// log, not the bus message, is the truth.
func (s *Store) ReadByID(ctx context.Context, id string) (events.Envelope, error) {
	rows, err := s.pool.Query(ctx, "SELECT "+selectCols+" FROM events WHERE id = $1", pg.UUIDArg(id))
	if err != nil {
		return events.Envelope{}, err
	}
	return pgx.CollectOneRow(rows, scanEnvelope)
}

// ReadOwnerAfter is ReadAfter for one owner: the events a projection held
// back for that owner while one of them was parked.
func (s *Store) ReadOwnerAfter(ctx context.Context, owner string, after int64, limit int) ([]events.Envelope, error) {
	return s.envelopes(ctx, "SELECT "+selectCols+" FROM events WHERE owner_id = $1 AND seq > $2 ORDER BY seq LIMIT $3", pg.UUIDArg(owner), after, limit)
}

// FirstAfter returns the smallest sequence number stored after after (0
// when there is none). Appends are serialized, so once a seq is visible no
// smaller one can still appear: a consumer that saw seq n and finds no
// event between its position and n knows the gap is permanent (a rolled
// back append), which is how the snapshot projection proves its position.
func (s *Store) FirstAfter(ctx context.Context, after int64) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, "SELECT COALESCE(min(seq), 0) FROM events WHERE seq > $1", after).Scan(&n)
	return n, err
}

// OwnerHead returns the highest sequence number of owner's events (0 when
// the owner has none): the log position a read of that owner's data must
// reflect to include all of its writes.
func (s *Store) OwnerHead(ctx context.Context, owner string) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, "SELECT COALESCE(max(seq), 0) FROM events WHERE owner_id = $1", pg.UUIDArg(owner)).Scan(&n)
	return n, err
}

// Head returns the highest sequence number stored (0 for an empty log): the
// log position a deployment-wide decision (a frozen benchmark) is cut at.
func (s *Store) Head(ctx context.Context) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, "SELECT COALESCE(max(seq), 0) FROM events").Scan(&n)
	return n, err
}

// StreamsWithType lists the streams, of every owner, that have an event of
// type typ at or before asOf (0 = now), in first-such-event order: how a
// deployment-wide command finds the traces it reads (the shared evaluator
// reads every trace with a reviewed comparison).
func (s *Store) StreamsWithType(ctx context.Context, typ string, asOf int64) ([]string, error) {
	return pg.Append(ctx, s.pool, nil, pgx.RowTo[string], `SELECT stream FROM events WHERE type = $1 AND ($2 = 0 OR seq <= $2)
		GROUP BY stream ORDER BY min(seq)`, typ, asOf)
}

// envelopes runs a "SELECT "+selectCols query and returns its events as
// stored.
func (s *Store) envelopes(ctx context.Context, sql string, args ...any) ([]events.Envelope, error) {
	return pg.Append(ctx, s.pool, nil, scanEnvelope, sql, args...)
}

// LoadStreamTypes returns the events of one stream whose type is one of
// types, in version order, with claim checks resolved: a fold that needs
// only some facts of a long stream (which shared-evaluator release is
// live, without every benchmark and margin) reads only those.
func (s *Store) LoadStreamTypes(ctx context.Context, stream string, types []string) ([]events.Envelope, error) {
	var out []events.Envelope
	err := s.eachResolved(ctx, func(e events.Envelope) { out = append(out, e) },
		"SELECT "+selectCols+" FROM events WHERE stream = $1 AND type = ANY($2) ORDER BY version", stream, types)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// eachResolved calls add with each event of a "SELECT "+selectCols query,
// its claim check resolved; an erased event is passed over, as if it had
// never been appended.
func (s *Store) eachResolved(ctx context.Context, add func(events.Envelope), sql string, args ...any) error {
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		e, err := scanEnvelope(rows)
		if err != nil {
			return err
		}
		if e, err = Resolve(ctx, s.blobs, s.keys, e); IsErased(err) {
			continue
		} else if err != nil {
			return err
		}
		add(e)
	}
	return rows.Err()
}
