package projections

import (
	"context"
	"fmt"
	"slices"

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
	skipped := func(e events.Envelope) bool { return s[e.ID] }
	if !slices.ContainsFunc(envs, skipped) {
		return envs
	}
	return slices.DeleteFunc(slices.Clone(envs), skipped)
}
