package dispatch

import (
	"context"
	"log/slog"
	"time"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/projections/readmodel"
)

// Background scoring (spec 001 "Learned action credit"): every ready model
// trained on action comparisons scores its owner's traces — those it has
// no score for at their current revision, new or changed ones once they
// have been idle for the debounce — in batches of up to
// commands.MaxBatchTraces, at most MaxActiveBatches at a time per model.
// The read model nominates; each trace's scoring stream decides
// (commands.RequestBackgroundBatch), so two API instances that tick at
// once request each trace once.

// MaxActiveBatches is how many automatic batches one model has queued or
// running at most.
const MaxActiveBatches = 2

// DefaultScoringDebounce is CRITIC_SCORING_DEBOUNCE's default: a trace is
// scored once it has not changed for this long.
const DefaultScoringDebounce = 30 * time.Second

// BackgroundQueries nominates background scoring's work.
type BackgroundQueries interface {
	DBNow(ctx context.Context) (time.Time, error)
	BackgroundModels(ctx context.Context) ([]readmodel.BackgroundModel, error)
	BackgroundCandidates(ctx context.Context, ownerID, modelID string, changedBefore time.Time, skip []string, limit int) ([]string, error)
}

// maxSkipped bounds the traces remembered as having nothing to score.
const maxSkipped = 10000

// busyInterval is how often background scoring looks for work while
// batches are in flight: a batch that ends frees its slot for the next
// one within this, not a whole interval later.
const busyInterval = 250 * time.Millisecond

// RunBackgroundScoring requests background batches every interval (every
// busyInterval while any is in flight) until ctx ends. debounce is the
// idle time a trace's last change must be older than (by the database's
// clock, which times the changes).
func RunBackgroundScoring(ctx context.Context, q BackgroundQueries, cmds *commands.Commands, interval, debounce time.Duration, log *slog.Logger) error {
	// noActions remembers, per model, traces the command found nothing to
	// score in (only thinking, say), so they are not nominated every tick.
	noActions := map[string]map[string]bool{}
	busy := false
	for {
		wait := interval
		if busy {
			wait = min(interval, busyInterval)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		busy = false
		now, err := q.DBNow(ctx)
		if err != nil {
			log.Warn("background scoring: read the database clock", "err", err)
			continue
		}
		models, err := q.BackgroundModels(ctx)
		if err != nil {
			log.Warn("background scoring: list models", "err", err)
			continue
		}
		for _, m := range models {
			if ctx.Err() != nil {
				return nil
			}
			busy = busy || m.ActiveBatches > 0
			slots := MaxActiveBatches - m.ActiveBatches
			if slots <= 0 {
				continue
			}
			skip := noActions[m.ID]
			if len(skip) > maxSkipped {
				skip = nil
			}
			if skip == nil {
				skip = map[string]bool{}
				noActions[m.ID] = skip
			}
			skipped := make([]string, 0, len(skip))
			for id := range skip {
				skipped = append(skipped, id)
			}
			ids, err := q.BackgroundCandidates(ctx, m.OwnerID, m.ID, now.Add(-debounce), skipped, slots*commands.MaxBatchTraces)
			if err != nil {
				log.Warn("background scoring: list candidates", "model", m.ID, "err", err)
				continue
			}
			for len(ids) > 0 {
				n := min(len(ids), commands.MaxBatchTraces)
				b, err := cmds.RequestBackgroundBatch(ctx, m.ID, ids[:n])
				ids = ids[n:]
				if err != nil {
					log.Warn("background scoring: request a batch", "model", m.ID, "err", err)
					break
				}
				for _, id := range b.NoActions {
					skip[id] = true
				}
				if b.BatchID != "" {
					busy = true
					log.Info("background scoring: batch requested", "model", m.ID, "batch", b.BatchID, "traces", len(b.TraceIDs))
				}
			}
		}
	}
}

// WithBackgroundMetrics counts background scoring as the dispatch
// projection sees its events (once per event, whichever instance applies
// it): batch(traces) for each batch requested, outcome("scored" or
// "failed") for each automatic run that ended.
func (d *Dispatcher) WithBackgroundMetrics(batch func(traces int), outcome func(string)) *Dispatcher {
	d.bgBatch, d.bgOutcome = batch, outcome
	return d
}

// countBackground feeds WithBackgroundMetrics.
func (d *Dispatcher) countBackground(e events.Envelope) {
	switch e.Type {
	case events.ScoringBatchRequested:
		var p events.ScoringBatchRequestedV1
		if d.bgBatch != nil && e.Decode(&p) == nil {
			d.bgBatch(len(p.Runs))
		}
	case events.ScoringRunSucceeded, events.ScoringRunFailed:
		var p struct {
			Automatic bool `json:"automatic"`
		}
		if d.bgOutcome != nil && e.Decode(&p) == nil && p.Automatic {
			d.bgOutcome(map[string]string{events.ScoringRunSucceeded: "scored", events.ScoringRunFailed: "failed"}[e.Type])
		}
	}
}
