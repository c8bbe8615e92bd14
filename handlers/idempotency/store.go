// Package idempotency makes every write (POST, PATCH, PUT, DELETE) safe to
// retry. A client that sends an `Idempotency-Key` header (IETF
// draft-ietf-httpapi-idempotency-key-header) gets, for a retry with the
// same key, the answer of the first request — status, headers and body —
// and nothing is appended again; the same key with a different request is
// refused (422), and a retry while the first request still runs is told so
// (409). So a client that lost an answer (a timeout, a 503, an instance that
// crashed mid-request) retries without writing twice.
//
// Keys are scoped to the account of the API key that sent them and kept in
// Postgres (table idempotency_keys) for a day by default, so a retry may go
// to any API instance. It is one HTTP middleware in front of every surface
// (REST, OTLP, Connect/gRPC), because all of them take writes.
package idempotency

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultTTL is how long a key is remembered after its first request.
const DefaultTTL = 24 * time.Hour

// DefaultLease is how long an in-flight request holds its key without a
// renewal: a request whose instance died frees its key this long after.
const DefaultLease = 3 * time.Second

// Store keeps the keys in Postgres.
type Store struct {
	pool  *pgxpool.Pool
	ttl   time.Duration
	lease time.Duration
}

// NewStore returns a store over pool; zero durations take the defaults.
func NewStore(pool *pgxpool.Pool, ttl, lease time.Duration) *Store {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	if lease <= 0 {
		lease = DefaultLease
	}
	return &Store{pool: pool, ttl: ttl, lease: lease}
}

// attempt identifies one request holding a key.
type attempt struct {
	owner, key, requestID string
	startSeq              int64
}

// record is a key's stored state.
type record struct {
	state       string
	fingerprint []byte
	method      string
	path        string
	leaseLive   bool
	requestID   string
	startSeq    int64
	resp        response
}

// response is an answer as stored and replayed.
type response struct {
	Status  int
	Header  http.Header
	Body    []byte
	Trailer http.Header
}

// begin claims key for a new attempt. It returns claimed=true when this
// request runs (a new key, or an expired one); otherwise the key's record.
func (s *Store) begin(ctx context.Context, owner, key string, fp []byte, method, path, requestID string) (attempt, bool, *record, error) {
	a := attempt{owner: owner, key: key, requestID: requestID}
	err := s.pool.QueryRow(ctx, `INSERT INTO idempotency_keys AS k (owner_id, key, fingerprint, method, path, state, lease_until, request_id, start_seq, expires_at)
		VALUES ($1, $2, $3, $4, $5, 'in_flight', now() + $6::interval, $7, (SELECT COALESCE(max(seq), 0) FROM events), now() + $8::interval)
		ON CONFLICT (owner_id, key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, method = EXCLUDED.method, path = EXCLUDED.path,
			state = 'in_flight', lease_until = EXCLUDED.lease_until, request_id = EXCLUDED.request_id, start_seq = EXCLUDED.start_seq,
			status = NULL, header = NULL, body = NULL, trailer = NULL, created_at = now(), expires_at = EXCLUDED.expires_at
		WHERE k.expires_at < now()
		RETURNING start_seq`, owner, key, fp, method, path, s.lease, requestID, s.ttl).Scan(&a.startSeq)
	if err == nil {
		return a, true, nil, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return a, false, nil, err
	}
	rec, err := s.load(ctx, owner, key)
	return a, false, rec, err
}

func (s *Store) load(ctx context.Context, owner, key string) (*record, error) {
	var r record
	var status *int
	var header, trailer []byte
	err := s.pool.QueryRow(ctx, `SELECT state, fingerprint, method, path, lease_until > now(), request_id, start_seq, status, header, body, trailer
		FROM idempotency_keys WHERE owner_id = $1 AND key = $2`, owner, key).
		Scan(&r.state, &r.fingerprint, &r.method, &r.path, &r.leaseLive, &r.requestID, &r.startSeq, &status, &header, &r.resp.Body, &trailer)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errVanished
	}
	if err != nil {
		return nil, err
	}
	if status != nil {
		r.resp.Status = *status
	}
	if len(header) > 0 {
		if err := json.Unmarshal(header, &r.resp.Header); err != nil {
			return nil, err
		}
	}
	if len(trailer) > 0 {
		if err := json.Unmarshal(trailer, &r.resp.Trailer); err != nil {
			return nil, err
		}
	}
	return &r, nil
}

// errVanished: the key expired and was swept between two statements; the
// caller tries again.
var errVanished = errors.New("idempotency: key vanished")

// takeOver claims a key whose attempt was abandoned (its lease ran out)
// for a new attempt, if no one else did first.
func (s *Store) takeOver(ctx context.Context, owner, key, oldRequestID, requestID string) (attempt, bool, error) {
	a := attempt{owner: owner, key: key, requestID: requestID}
	err := s.pool.QueryRow(ctx, `UPDATE idempotency_keys SET request_id = $4, lease_until = now() + $5::interval,
			start_seq = (SELECT COALESCE(max(seq), 0) FROM events)
		WHERE owner_id = $1 AND key = $2 AND state = 'in_flight' AND request_id = $3 AND lease_until <= now()
		RETURNING start_seq`, owner, key, oldRequestID, requestID, s.lease).Scan(&a.startSeq)
	if errors.Is(err, pgx.ErrNoRows) {
		return a, false, nil
	}
	return a, err == nil, err
}

// appended reports whether an attempt stored any event: events of its
// owner after the log head it began at, carrying its request id as their
// correlation id.
func (s *Store) appended(ctx context.Context, owner, requestID string, startSeq int64) (bool, error) {
	var ok bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM events WHERE owner_id = $1 AND seq > $2 AND correlation_id = $3)`,
		owner, startSeq, requestID).Scan(&ok)
	return ok, err
}

// renew extends the attempt's lease.
func (s *Store) renew(ctx context.Context, a attempt) error {
	_, err := s.pool.Exec(ctx, `UPDATE idempotency_keys SET lease_until = now() + $4::interval
		WHERE owner_id = $1 AND key = $2 AND request_id = $3 AND state = 'in_flight'`, a.owner, a.key, a.requestID, s.lease)
	return err
}

// complete stores the attempt's answer.
func (s *Store) complete(ctx context.Context, a attempt, r response) error {
	header, err := json.Marshal(r.Header)
	if err != nil {
		return err
	}
	var trailer []byte
	if len(r.Trailer) > 0 {
		if trailer, err = json.Marshal(r.Trailer); err != nil {
			return err
		}
	}
	_, err = s.pool.Exec(ctx, `UPDATE idempotency_keys SET state = 'done', status = $4, header = $5, body = $6, trailer = $7
		WHERE owner_id = $1 AND key = $2 AND request_id = $3 AND state = 'in_flight'`,
		a.owner, a.key, a.requestID, r.Status, header, r.Body, trailer)
	return err
}

// release forgets the attempt, so a retry runs the request again: only for
// an attempt that stored nothing.
func (s *Store) release(ctx context.Context, a attempt) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE owner_id = $1 AND key = $2 AND request_id = $3 AND state = 'in_flight'`,
		a.owner, a.key, a.requestID)
	return err
}

// Sweep deletes expired keys and returns how many.
func (s *Store) Sweep(ctx context.Context) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE expires_at < now()`)
	return tag.RowsAffected(), err
}

// RunSweeper sweeps every interval until ctx ends (every API instance runs
// one; they do not need to agree).
func (s *Store) RunSweeper(ctx context.Context, every time.Duration, onErr func(error)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := s.Sweep(ctx); err != nil && ctx.Err() == nil && onErr != nil {
			onErr(err)
		}
	}
}
