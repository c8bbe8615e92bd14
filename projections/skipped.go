package projections

import (
	"context"
	"fmt"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/platform/eventstore"
	"github.com/criticml/critic/platform/pg"
	"github.com/jackc/pgx/v5"
)

// Skipped is the set of event ids operators skipped
// (projection.event_skipped): no projection applies them, live or in a
// replay.
type Skipped map[string]bool

// LoadSkipped reads every skip from the log. A replay loads it before it
// starts, since a skip is appended after the event it skips.
func LoadSkipped(ctx context.Context, store *eventstore.Store) (Skipped, error) {
	ids, err := pg.Append(ctx, store.Pool(), nil, pgx.RowTo[string], `SELECT payload->>'event_id' FROM events WHERE type = $1`, events.ProjectionEventSkipped)
	if err != nil {
		return nil, fmt.Errorf("load skipped events: %w", err)
	}
	out := make(Skipped, len(ids))
	for _, id := range ids {
		out[id] = true
	}
	return out, nil
}

// Without returns envs less the skipped events (envs itself when none is).
func (s Skipped) Without(envs []events.Envelope) []events.Envelope {
	if len(s) == 0 {
		return envs
	}
	n := 0
	for _, e := range envs {
		if s[e.ID] {
			n++
		}
	}
	if n == 0 {
		return envs
	}
	out := make([]events.Envelope, 0, len(envs)-n)
	for _, e := range envs {
		if !s[e.ID] {
			out = append(out, e)
		}
	}
	return out
}
