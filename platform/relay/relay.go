// Package relay moves events from the Postgres event store to the Kafka topic
// critic.events, in sequence order, at least once. Only one relay publishes at
// a time (a session advisory lock elects it); the others stand by. When the
// broker is down the relay keeps retrying and events simply wait in Postgres.
package relay

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/platform/bus"
	"github.com/criticml/critic/platform/eventstore"
	"github.com/criticml/critic/platform/jsonscan"
)

// Topic carries every event, keyed by owner id so one owner's events keep
// their order.
const Topic = "critic.events"

// LeaderLockKey is the advisory lock the publishing relay holds: a
// maintenance command that must not run beside an API instance takes it.
const LeaderLockKey = 7_210_002

// leaderPoll is how often a standby relay tries to take over: a crashed
// leader's events start flowing again within it.
const leaderPoll = 250 * time.Millisecond

// Publisher is the one thing the relay needs from the bus.
type Publisher interface {
	Publish(topic string, msgs ...*message.Message) error
}

// Observer sees every publish call (the events it carried, when it started,
// how it ended): metrics and tracing hang off it, so the relay itself knows
// nothing about either.
type Observer interface {
	Published(ctx context.Context, start time.Time, evs []events.Envelope, err error)
}

// Relay tails the events table and publishes.
type Relay struct {
	name  string
	store *eventstore.Store
	pool  *pgxpool.Pool
	pub   Publisher
	log   *slog.Logger
	batch int
	obs   Observer
}

// WithObserver makes r report every publish call to o.
func (r *Relay) WithObserver(o Observer) *Relay {
	r.obs = o
	return r
}

// New returns a relay named name (its cursor's key).
func New(name string, store *eventstore.Store, pub Publisher, log *slog.Logger) *Relay {
	return &Relay{name: name, store: store, pool: store.Pool(), pub: pub, log: log, batch: 1000}
}

// Message converts an envelope into the bus message the consumers decode:
// the JSON of events.Envelope. It is written by concatenation rather than
// json.Marshal, which would re-validate and re-compact every payload (the
// largest part of the message) and HTML-escape it; the payload comes from a
// jsonb column, so it is valid JSON already and goes out byte for byte.
func Message(e events.Envelope) (*message.Message, error) {
	b := make([]byte, 0, len(e.Payload)+len(e.Stream)+len(e.Actor)+len(e.CausationID)+len(e.CorrelationID)+320)
	b = append(b, `{"seq":`...)
	b = strconv.AppendInt(b, e.Seq, 10)
	b = appendField(b, "id", e.ID)
	b = appendField(b, "stream", e.Stream)
	b = append(b, `,"version":`...)
	b = strconv.AppendInt(b, e.Version, 10)
	b = appendField(b, "owner_id", e.OwnerID)
	b = appendField(b, "type", e.Type)
	b = appendField(b, "actor", e.Actor)
	if e.CausationID != "" {
		b = appendField(b, "causation_id", e.CausationID)
	}
	if e.CorrelationID != "" {
		b = appendField(b, "correlation_id", e.CorrelationID)
	}
	t, err := e.RecordedAt.MarshalJSON()
	if err != nil {
		return nil, err
	}
	b = append(b, `,"recorded_at":`...)
	b = append(b, t...)
	b = append(b, `,"payload":`...)
	if len(e.Payload) == 0 {
		b = append(b, "null"...)
	} else {
		b = append(b, e.Payload...)
	}
	b = append(b, '}')
	m := message.NewMessage(e.ID, b)
	m.Metadata.Set(bus.MetadataPartitionKey, e.OwnerID)
	m.Metadata.Set("type", e.Type)
	return m, nil
}

// appendField appends ,"name":"value" with value JSON-escaped.
func appendField(b []byte, name, value string) []byte {
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return jsonscan.AppendString(b, value)
}

// Run publishes until ctx ends. It returns nil on cancellation.
func (r *Relay) Run(ctx context.Context) error {
	for {
		err := r.lead(ctx)
		if ctx.Err() != nil {
			return nil
		}
		r.log.Warn("relay: restarting", "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
}

// lead waits to become the leader, then publishes while it holds the lock.
func (r *Relay) lead(ctx context.Context) error {
	conn, err := r.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	// The lock lives as long as this session: when the leader's process
	// dies its socket closes and Postgres frees the lock at once; when its
	// machine vanishes, these keepalives (settable per session) end the
	// session within about 8 s instead of the kernel's two hours.
	if _, err := conn.Exec(ctx, "SET tcp_keepalives_idle = 5; SET tcp_keepalives_interval = 1; SET tcp_keepalives_count = 3"); err != nil {
		return err
	}
	standby := false
	for {
		var got bool
		if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", LeaderLockKey).Scan(&got); err != nil {
			return err
		}
		if got {
			break
		}
		if !standby {
			standby = true
			r.log.Info("relay: standing by; another instance publishes the outbox to Kafka")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(leaderPoll):
		}
	}
	defer func() {
		_, _ = conn.Exec(context.Background(), "SELECT pg_advisory_unlock($1)", LeaderLockKey)
		r.log.Info("relay: stopped publishing on this instance", "name", r.name)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+eventstore.NotifyChannel); err != nil {
		return err
	}
	cursor, err := r.cursor(ctx)
	if err != nil {
		return err
	}
	r.log.Info("relay: this instance now publishes the outbox to Kafka", "name", r.name, "from_seq", cursor)
	backoff := 100 * time.Millisecond
	for {
		evs, err := r.store.ReadAfter(ctx, cursor, r.batch)
		if err != nil {
			return err
		}
		if len(evs) == 0 {
			wctx, cancel := context.WithTimeout(ctx, time.Second)
			_, err := conn.Conn().WaitForNotification(wctx)
			cancel()
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err != nil && !errors.Is(err, context.DeadlineExceeded) {
				return err
			}
			continue
		}
		// Publish in chunks of at most maxPublishBytes: the producer then
		// sends each partition at most one batch per call, so a call that
		// fails part-way cannot leave a later batch of an owner's events in
		// the log ahead of an earlier one; the retry only duplicates what
		// landed (consumers dedupe by event id). Every chunk of what was read
		// is published before reading again (re-reading the rest of a batch
		// per chunk cost Postgres several jsonb outputs of every event), and
		// chunk k+1 is only sent after chunk k succeeded, so seq order holds.
		msgs, err := messages(evs)
		if err != nil {
			return err
		}
		published := cursor
		var pubErr error
		for len(msgs) > 0 {
			n := chunkLen(msgs)
			t0 := time.Now()
			pubErr = r.pub.Publish(Topic, msgs[:n]...)
			if r.obs != nil {
				r.obs.Published(ctx, t0, evs[:n], pubErr)
			}
			if pubErr != nil {
				break
			}
			published = evs[n-1].Seq
			msgs, evs = msgs[n:], evs[n:]
		}
		if published != cursor {
			cursor = published
			if _, err := r.pool.Exec(ctx, `INSERT INTO relay_cursor (name, seq) VALUES ($1, $2)
			ON CONFLICT (name) DO UPDATE SET seq = EXCLUDED.seq`, r.name, cursor); err != nil {
				return err
			}
		}
		if pubErr != nil {
			r.log.Warn("relay: publish failed; events wait in Postgres", "err", pubErr, "retry_in", backoff)
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, 5*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
	}
}

// maxPublishBytes stays under the producer's per-partition batch limit
// (bus.DefaultBatchBytes, 1 MiB) with room for headers.
const maxPublishBytes = 900 << 10

// messages converts every envelope.
func messages(evs []events.Envelope) ([]*message.Message, error) {
	msgs := make([]*message.Message, len(evs))
	for i, e := range evs {
		m, err := Message(e)
		if err != nil {
			return nil, err
		}
		msgs[i] = m
	}
	return msgs, nil
}

// chunkLen returns how many leading messages fit in maxPublishBytes (always
// at least one).
func chunkLen(msgs []*message.Message) int {
	size := 0
	for i, m := range msgs {
		if i > 0 && size+len(m.Payload) > maxPublishBytes {
			return i
		}
		size += len(m.Payload)
	}
	return len(msgs)
}

func (r *Relay) cursor(ctx context.Context) (int64, error) {
	var seq int64
	err := r.pool.QueryRow(ctx, "SELECT seq FROM relay_cursor WHERE name = $1", r.name).Scan(&seq)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return seq, err
}

// Lag returns how many stored events the relay has not published yet.
func Lag(ctx context.Context, pool *pgxpool.Pool, name string) (int64, error) {
	var n int64
	err := pool.QueryRow(ctx, `SELECT count(*) FROM events WHERE seq > COALESCE((SELECT seq FROM relay_cursor WHERE name = $1), 0)`, name).Scan(&n)
	return n, err
}
