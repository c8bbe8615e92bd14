package dispatch

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
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
	BackgroundCandidates(ctx context.Context, ownerID, modelID string, changedBefore time.Time, from readmodel.BackgroundCursor, skip []string, limit int) ([]string, *readmodel.BackgroundCursor, error)
}

// A model's look at its candidates starts where its last look found the
// first trace still to score (readmodel.BackgroundCandidates' unsettled),
// so an account whose traces are scored costs a look at its newest traces,
// not at all of them. The cursor stays lookBehind short of the debounce's
// edge: a trace the read model applies late, with a change older than
// that, is missed by the cursor — fullLookEvery, every model looks at all
// its traces again, so such a trace waits at most that long.
const (
	lookBehind    = time.Minute
	fullLookEvery = 5 * time.Minute
)

// maxSkipped bounds the traces remembered as having nothing to score.
const maxSkipped = 10000

// BackgroundWake refills a model's batch slot when its batch ends rather
// than on the next tick: the dispatch projection (WithBackgroundWake) tells
// it each automatic run that ended, and RunBackgroundScoring looks at that
// model again once the read model, which counts the batches in flight, has
// applied the run's end. With one worker and a model that scores a trace in
// tens of milliseconds, the slot then waits for no tick, and the scheduler
// does not poll while batches run. A run whose event another instance's
// dispatcher consumed wakes that instance; the tick still covers the rest.
//
// It also times the debounce: each event on a trace's stream the projection
// sees makes RunBackgroundScoring look at every model once that event is
// the debounce old (a new or changed trace's event is recorded at the time
// the read model keeps as its last change; other trace events only cost a
// look), rather than at the next tick — a tick of up to 3 s after the
// debounce was most of a new trace's wait (bench-score's first claim came
// 0.2–0.9 s after a 1 s debounce).
type BackgroundWake struct {
	mu      sync.Mutex
	pending map[string]string // model id → its latest ended run's event id
	changed traceChange       // the latest trace change since the last take
	ch      chan struct{}
}

// traceChange is a trace event: when it was recorded, and its id (what the
// read model must have applied before the trace can be a candidate).
type traceChange struct {
	at      time.Time
	eventID string
}

// NewBackgroundWake returns a wake nothing has signalled yet.
func NewBackgroundWake() *BackgroundWake {
	return &BackgroundWake{pending: map[string]string{}, ch: make(chan struct{}, 1)}
}

// runEnded records that an automatic run of modelID ended in eventID. One
// owner's events reach the read model in order, so the latest event of a
// model is the one to wait for.
func (w *BackgroundWake) runEnded(modelID, eventID string) {
	w.mu.Lock()
	w.pending[modelID] = eventID
	w.mu.Unlock()
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

// traceChanged records a trace event recorded at at.
func (w *BackgroundWake) traceChanged(at time.Time, eventID string) {
	w.mu.Lock()
	if !at.Before(w.changed.at) {
		w.changed = traceChange{at: at, eventID: eventID}
	}
	w.mu.Unlock()
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

// take returns and clears the models woken and the latest trace change
// since the last take.
func (w *BackgroundWake) take() (map[string]string, traceChange) {
	w.mu.Lock()
	defer w.mu.Unlock()
	out, changed := w.pending, w.changed
	w.pending, w.changed = map[string]string{}, traceChange{}
	return out, changed
}

// debounceSlack is added to a change's debounce: the clock that times the
// candidates (the database's) may run a little behind this process's.
const debounceSlack = 50 * time.Millisecond

// ReadModelWaiter waits until the read model has applied an event
// (readmodel.Waiter).
type ReadModelWaiter interface {
	Wait(ctx context.Context, eventID string) error
}

// RunBackgroundScoring requests background batches for every model at
// start and every interval, and for a model woken by wake (nil: ticks
// only) as soon as the read model has applied the run end that woke it,
// until ctx ends.
// debounce is the idle time a trace's last change must be older than (by
// the database's clock, which times the changes).
func RunBackgroundScoring(ctx context.Context, q BackgroundQueries, cmds *commands.Commands, wake *BackgroundWake, waiter ReadModelWaiter,
	interval, debounce time.Duration, log *slog.Logger) error {
	s := &scheduler{q: q, cmds: cmds, waiter: waiter, debounce: debounce, log: log, noActions: map[string]map[string]bool{},
		cursors: map[string]modelCursor{}, now: time.Now}
	var woken <-chan struct{}
	if wake != nil {
		woken = wake.ch
	}
	s.pass(ctx, nil)
	tick := time.NewTimer(interval)
	defer tick.Stop()
	// due fires when the earliest trace change not yet looked at is the
	// debounce old (armed holds it); later is the latest change seen
	// since, looked at once due has fired.
	due := time.NewTimer(time.Hour)
	due.Stop()
	defer due.Stop()
	var armed, later traceChange
	arm := func(c traceChange) {
		armed = c
		due.Reset(time.Until(c.at.Add(debounce + debounceSlack)))
	}
	for {
		var only map[string]string
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			tick.Reset(interval)
		case <-due.C:
			if err := waiter.Wait(ctx, armed.eventID); err != nil && ctx.Err() == nil {
				log.Warn("background scoring: waiting for the read model", "err", err)
			}
			armed = traceChange{}
			if !later.at.IsZero() {
				arm(later)
				later = traceChange{}
			}
		case <-woken:
			var changed traceChange
			only, changed = wake.take()
			if !changed.at.IsZero() {
				if armed.at.IsZero() {
					arm(changed)
				} else if changed.at.After(armed.at) {
					later = changed
				}
			}
			if len(only) == 0 {
				continue
			}
			for model, eventID := range only {
				if err := waiter.Wait(ctx, eventID); err != nil && ctx.Err() == nil {
					log.Warn("background scoring: waiting for the read model", "model", model, "err", err)
				}
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		s.pass(ctx, only)
	}
}

// scheduler is RunBackgroundScoring's state between passes.
type scheduler struct {
	q        BackgroundQueries
	cmds     *commands.Commands
	debounce time.Duration
	log      *slog.Logger
	// noActions remembers, per model, traces the command found nothing to
	// score in (only thinking, say), so they are not nominated every pass.
	noActions map[string]map[string]bool
	// waiter and requested: the last batch request this scheduler
	// appended, which the read model (it counts the batches in flight)
	// must have applied before the next pass counts free slots — a pass
	// soon after another (a trace's debounce ending just after a refill)
	// would otherwise see the slots still free and request a third batch.
	waiter    ReadModelWaiter
	requested string
	// cursors: where each model's next look starts (see lookBehind).
	cursors map[string]modelCursor
	now     func() time.Time // this process's clock, which times fullLookEvery
}

// modelCursor is where a model's next look at its candidates starts, and
// when it last looked at all of them.
type modelCursor struct {
	from     readmodel.BackgroundCursor
	fullLook time.Time
}

// from is where model's look starts now: its cursor, or the beginning
// when its last full look is fullLookEvery old.
func (s *scheduler) from(model string) readmodel.BackgroundCursor {
	c := s.cursors[model]
	if s.now().Sub(c.fullLook) >= fullLookEvery {
		c = modelCursor{fullLook: s.now()}
		s.cursors[model] = c
	}
	return c.from
}

// advance moves model's cursor to the first trace its look found still to
// score, never past lookBehind short of the debounce's edge (changedBefore)
// and never back.
func (s *scheduler) advance(model string, changedBefore time.Time, unsettled *readmodel.BackgroundCursor) {
	c := s.cursors[model]
	next := readmodel.BackgroundCursor{UpdatedAt: changedBefore.Add(-lookBehind)}
	if unsettled != nil && unsettled.Before(next) {
		next = *unsettled
	}
	if c.from.Before(next) {
		c.from = next
		s.cursors[model] = c
	}
}

// pass fills the free batch slots of every model, or only of the models in
// only when it is not nil.
func (s *scheduler) pass(ctx context.Context, only map[string]string) {
	if s.requested != "" && s.waiter != nil {
		if err := s.waiter.Wait(ctx, s.requested); err != nil {
			s.log.Warn("background scoring: waiting for the read model", "err", err)
			return
		}
		s.requested = ""
	}
	now, err := s.q.DBNow(ctx)
	if err != nil {
		s.log.Warn("background scoring: read the database clock", "err", err)
		return
	}
	models, err := s.q.BackgroundModels(ctx)
	if err != nil {
		s.log.Warn("background scoring: list models", "err", err)
		return
	}
	for _, m := range models {
		if ctx.Err() != nil {
			return
		}
		if _, ok := only[m.ID]; only != nil && !ok {
			continue
		}
		slots := MaxActiveBatches - m.ActiveBatches
		if slots <= 0 {
			continue
		}
		skip := s.noActions[m.ID]
		if len(skip) > maxSkipped {
			skip = nil
		}
		if skip == nil {
			skip = map[string]bool{}
			s.noActions[m.ID] = skip
		}
		changedBefore := now.Add(-s.debounce)
		ids, unsettled, err := s.q.BackgroundCandidates(ctx, m.OwnerID, m.ID, changedBefore, s.from(m.ID), slices.Collect(maps.Keys(skip)), slots*commands.MaxBatchTraces)
		if err != nil {
			s.log.Warn("background scoring: list candidates", "model", m.ID, "err", err)
			continue
		}
		s.advance(m.ID, changedBefore, unsettled)
		for len(ids) > 0 {
			n := min(len(ids), commands.MaxBatchTraces)
			b, err := s.cmds.RequestBackgroundBatch.Handle(ctx, commands.RequestBackgroundBatch{ModelID: m.ID, TraceIDs: ids[:n]})
			ids = ids[n:]
			if err != nil {
				s.log.Warn("background scoring: request a batch", "model", m.ID, "err", err)
				break
			}
			for _, id := range b.NoActions {
				skip[id] = true
			}
			if b.BatchID != "" {
				s.requested = b.LastEventID
				s.log.Info("background scoring: batch requested", "model", m.ID, "batch", b.BatchID, "traces", len(b.TraceIDs))
			}
		}
	}
}

// WithBackgroundWake makes the dispatcher wake background scoring (w) for
// every automatic run that ends, so a finished batch's slot is refilled at
// once.
func (d *Dispatcher) WithBackgroundWake(w *BackgroundWake) *Dispatcher {
	d.bgWake = w
	return d
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
	if d.bgWake != nil && strings.HasPrefix(e.Stream, events.TraceStream("")) {
		d.bgWake.traceChanged(e.RecordedAt, e.ID)
	}
	switch e.Type {
	case events.ScoringBatchRequested:
		var p events.ScoringBatchRequestedV1
		if d.bgBatch != nil && e.Decode(&p) == nil {
			d.bgBatch(len(p.Runs))
		}
	case events.ScoringRunSucceeded, events.ScoringRunFailed:
		var p struct {
			ModelID   string `json:"model_id"`
			Automatic bool   `json:"automatic"`
		}
		if e.Decode(&p) != nil || !p.Automatic {
			return
		}
		if d.bgOutcome != nil {
			d.bgOutcome(map[string]string{events.ScoringRunSucceeded: "scored", events.ScoringRunFailed: "failed"}[e.Type])
		}
		if d.bgWake != nil {
			d.bgWake.runEnded(p.ModelID, e.ID)
		}
	}
}
