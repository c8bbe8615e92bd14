package eventstore

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/platform/pg"
)

// SealExisting seals, in place, every stored event whose payload Append
// would seal today (sealedScope) but that was stored in clear — before
// encryption existed or with CRITIC_ENCRYPTION=off — so that deleting its
// trace (or erasing its account) shreds it like any other. Claim-checked
// payloads are sealed into a new blob, and the plaintext blob is deleted
// once the row names the new one.
//
// This is the one rewrite of the log the immutability trigger lets
// through, and only inside this function's transactions (the trigger is
// disabled and re-enabled within each, under the table's exclusive lock, so
// no other session ever sees it off): the row keeps its seq, id, stream,
// version, owner, type, actor and time, and its payload, opened, is the
// same JSON byte for byte — each sealed payload is opened and compared
// before it is written. Nothing any consumer folds changes; only who can
// read it once a key is destroyed.
//
// It runs in batches of batch events, one transaction each, and is
// resumable: an event already sealed is skipped, so a second run (or one
// after an interruption) seals only what is left. progress is called after
// each batch with the events sealed so far and the total to seal. Run it
// with every API instance stopped: a relay publishing meanwhile would send
// the old plaintext rows and the rewritten ones both.
func (s *Store) SealExisting(ctx context.Context, batch int, progress func(done, total int)) (int, error) {
	if s.keys == nil {
		return 0, errors.New("encryption is off (CRITIC_ENCRYPTION=off): there is no key to seal with")
	}
	if batch <= 0 {
		batch = 500
	}
	todo, err := s.unsealed(ctx)
	if err != nil {
		return 0, err
	}
	done := 0
	for chunk := range slices.Chunk(todo, batch) {
		n, err := s.sealBatch(ctx, chunk)
		if err != nil {
			return done, err
		}
		done += n
		if progress != nil {
			progress(done, len(todo))
		}
	}
	return done, nil
}

// unsealed lists the seqs of the events SealExisting must seal: sealed
// scope, payload not sealed inline nor in the blob it is claim-checked to.
func (s *Store) unsealed(ctx context.Context) ([]int64, error) {
	// Only the envelope and claim checks are read here, not every payload:
	// the log can be far larger than memory.
	type row struct {
		seq                    int64
		id, stream, typ, owner string
		claim                  []byte
	}
	var candidates []row
	var r row
	if err := pg.Each(ctx, s.pool, []any{&r.seq, &r.id, &r.stream, &r.typ, &r.owner, &r.claim}, func() error {
		if sealedScope(r.stream, r.typ, r.owner) != "" {
			candidates = append(candidates, r)
		}
		return nil
	}, `SELECT seq, id::text, stream, type, owner_id::text,
		CASE WHEN payload ? 'claim_check' THEN payload END FROM events WHERE NOT payload ? 'sealed' ORDER BY seq`); err != nil {
		return nil, err
	}
	var out []int64
	for _, r := range candidates {
		if cc := claimCheckOf(r.claim); cc != nil {
			raw, err := s.blobs.Get(ctx, cc.Key)
			if errors.Is(err, blob.ErrNotFound) {
				continue // erased with its trace: nothing left to seal
			}
			if err != nil {
				return nil, fmt.Errorf("event %s: read claim-checked payload %s: %w", r.id, cc.Key, err)
			}
			if events.IsSealed(raw) {
				continue
			}
		}
		out = append(out, r.seq)
	}
	return out, nil
}

// sealBatch seals the events at seqs in one transaction and returns how
// many it rewrote; blobs it replaced are deleted after the commit.
func (s *Store) sealBatch(ctx context.Context, seqs []int64) (int, error) {
	envs, err := s.envelopes(ctx, "SELECT "+selectCols+" FROM events WHERE seq = ANY($1) ORDER BY seq", seqs)
	if err != nil {
		return 0, err
	}
	type rewrite struct {
		seq     int64
		payload []byte
	}
	var (
		writes  []rewrite
		oldBlob []string
		newBlob []string
		scopes  []string
	)
	for _, e := range envs {
		if sc := sealedScope(e.Stream, e.Type, e.OwnerID); sc != "" {
			scopes = append(scopes, sc)
		}
		if e.Type == events.RewardModelFindingRecorded {
			var p events.RewardModelFindingRecordedV1
			if json.Unmarshal(e.Payload, &p) == nil && p.TraceID != "" {
				scopes = append(scopes, events.TraceStream(p.TraceID))
			}
		}
	}
	keys, err := s.keys.Ensure(ctx, scopes)
	if err != nil {
		return 0, err
	}
	// A scope whose key is destroyed already (a trace deleted, an account
	// erased, while its events were in clear) gets a key that is never
	// stored: its leftover plaintext is shredded, as Append would have.
	shredded := map[string]bool{}
	for sc, k := range keys {
		if k == nil {
			if keys[sc], err = throwawayKey(); err != nil {
				return 0, err
			}
			shredded[sc] = true
		}
	}
	for _, e := range envs {
		raw := e.Payload
		cc := claimCheckOf(raw)
		if cc != nil {
			resolved, err := resolveClaimCheck(ctx, s.blobs, e)
			if err != nil {
				return 0, err
			}
			raw = resolved.Payload
		}
		if events.IsSealed(raw) {
			continue // sealed since it was listed
		}
		n := events.New{ID: e.ID, Stream: e.Stream, OwnerID: e.OwnerID, Type: e.Type, Payload: json.RawMessage(raw)}
		if e.Type == events.RewardModelFindingRecorded {
			var p events.RewardModelFindingRecordedV1
			if err := json.Unmarshal(raw, &p); err != nil {
				return 0, &events.UnreadableError{EventID: e.ID, Type: e.Type, Stream: e.Stream, Err: err}
			}
			n.Payload = p
		}
		sealed, err := s.sealPayload(keys, n, raw)
		if err != nil {
			return 0, err
		}
		// The rewrite is allowed only because it changes nothing a reader
		// gets: prove it before writing (a shredded one reads as erased).
		if !shredded[sealedScope(e.Stream, e.Type, e.OwnerID)] && !shredded[quotedScope(n)] {
			check := e
			check.Payload = sealed
			opened, err := Resolve(ctx, s.blobs, s.keys, check)
			if err != nil {
				return 0, fmt.Errorf("event %s: open the sealed payload: %w", e.ID, err)
			}
			if !bytes.Equal(opened.Payload, raw) {
				return 0, fmt.Errorf("event %s: the sealed payload does not open to the stored one; nothing of this batch was written", e.ID)
			}
		}
		if len(sealed) > MaxInlinePayload {
			key := "events/" + e.ID + ".sealed.json"
			if sealed, err = s.claimCheckAt(ctx, key, sealed); err != nil {
				return 0, err
			}
			newBlob = append(newBlob, key)
		}
		if cc != nil {
			oldBlob = append(oldBlob, cc.Key)
		}
		writes = append(writes, rewrite{seq: e.Seq, payload: sealed})
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// The append lock first, then the table's: an append (there should
		// be none, the server is stopped) waits rather than deadlocks.
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", appendLockKey); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "ALTER TABLE events DISABLE TRIGGER events_no_update"); err != nil {
			return fmt.Errorf("lift the immutability trigger for this transaction: %w", err)
		}
		for _, w := range writes {
			if _, err := tx.Exec(ctx, "UPDATE events SET payload = $1 WHERE seq = $2", string(w.payload), w.seq); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, "ALTER TABLE events ENABLE TRIGGER events_no_update")
		return err
	})
	if err != nil {
		for _, k := range newBlob {
			_ = s.blobs.Delete(ctx, k)
		}
		return 0, err
	}
	for _, k := range oldBlob {
		if err := s.blobs.Delete(ctx, k); err != nil && !errors.Is(err, blob.ErrNotFound) {
			return len(writes), fmt.Errorf("delete the plaintext blob %s (its event is sealed now; delete it by hand): %w", k, err)
		}
	}
	return len(writes), nil
}

// throwawayKey is an AES-256-GCM key that is never stored.
func throwawayKey() (cipher.AEAD, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}
