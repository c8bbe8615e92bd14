// Package snapshot is the projection behind POST /query: one DuckDB file per
// owner with the tables traces, steps, annotations, scores, action_scores,
// step_labels and task_scores (the automatic annotation, derived from the
// steps by domain/assessment; see assessment.go) and evaluator_scores (the
// shared evaluator's automatic scores).
// platform/duck owns the files and the query sandbox. It is eventually
// consistent with the log — it trails it by the relay and consumer delay —
// and disposable: Replay rebuilds every file from the event store.
package snapshot

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/criteria"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/labels"
	"github.com/criticml/critic/domain/stepscores"
	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/platform/duck"
	"github.com/criticml/critic/platform/eventstore"
	"github.com/criticml/critic/platform/keyring"
	"github.com/criticml/critic/projections"
)

// Name is the projection's consumer group. Every process that serves
// /query keeps its own files, so each API instance consumes every partition
// in a group of its own, "snapshot-<instance>" (CRITIC_INSTANCE_ID); one
// shared group would split the owners.
const Name = "snapshot"

// Projection applies events to the per-owner snapshot files.
type Projection struct {
	snaps *duck.Snapshots
	blobs blob.Store
	keys  *keyring.Ring
	log   *slog.Logger
}

// WithKeyring opens sealed payloads with keys (the event store's keyring;
// nil when payloads are stored in clear or arrive opened, as in the query
// process).
func (p *Projection) WithKeyring(keys *keyring.Ring) *Projection {
	p.keys = keys
	return p
}

// New returns the projection writing into snaps.
func New(snaps *duck.Snapshots, blobs blob.Store, log *slog.Logger) *Projection {
	if log == nil {
		log = slog.Default()
	}
	return &Projection{snaps: snaps, blobs: blobs, log: log}
}

// appliers are the event types that change a snapshot, and how. Everything
// else (users' keys, OTel raw spans, source names) is skipped without being
// recorded, so it costs nothing.
var appliers = map[string]applier{
	events.TraceImported: func(ctx context.Context, w *writer, e events.Envelope) error {
		var p importedTrace
		if err := projections.DecodeImported(e, &p, decodeImportedFast); err != nil {
			return err
		}
		if _, ok := w.pending[p.TraceID]; !ok {
			w.order = append(w.order, p.TraceID)
		}
		w.revisions = append(w.revisions, p.TraceID, p.Revision)
		w.pending[p.TraceID] = &pendingTrace{
			row: duck.TraceRow{ID: p.TraceID, ExternalID: p.ExternalID, Title: p.Title, SourceFormat: p.SourceFormat,
				SourceID: domain.SourceID(p.SourceID, p.Metadata, p.SourceFormat), StepCount: len(p.Steps),
				Metadata: objectOrEmpty(p.Metadata), CreatedAt: e.RecordedAt, UpdatedAt: e.RecordedAt},
			steps:   stepRows(p.TraceID, p.Steps),
			records: p.Steps,
			meta:    p.Metadata,
		}
		return nil
	},
	events.TraceRevised: on(func(ctx context.Context, tx *duck.Tx, e events.Envelope, p events.TraceRevisedV1) error {
		tx.Touch(p.TraceID)
		if err := setRevision(ctx, tx, p.TraceID, p.Revision); err != nil {
			return err
		}
		// A new revision makes the trace's whole-trace scores stale, and
		// the shared evaluator's (the live release scores it again).
		if err := tx.DeleteScores(ctx, p.TraceID); err != nil {
			return err
		}
		if err := tx.Exec(ctx, `DELETE FROM main.evaluator_scores WHERE trace_id = ?`, p.TraceID); err != nil {
			return err
		}
		if p.Mode == events.RevisionAppended {
			if err := tx.AppendSteps(ctx, stepRows(p.TraceID, p.Steps)); err != nil {
				return err
			}
		} else {
			if err := tx.ReplaceSteps(ctx, p.TraceID, stepRows(p.TraceID, p.Steps)); err != nil {
				return err
			}
			// Kept steps keep their ids but may move; annotations follow
			// them (those on removed steps go by their own events).
			if err := tx.Exec(ctx, `UPDATE main.annotations SET step_index = s.step_index FROM main.steps s
			WHERE annotations.trace_id = ? AND s.trace_id = annotations.trace_id AND s.id = annotations.step_id`,
				p.TraceID); err != nil {
				return err
			}
		}
		meta, err := json.Marshal(objectOrEmpty(p.Metadata))
		if err != nil {
			return err
		}
		if err := tx.Exec(ctx, `UPDATE main.traces SET title = ?, source_format = ?, source_id = ?, metadata = ?,
		step_count = (SELECT count(*) FROM main.steps WHERE trace_id = ?), updated_at = ? WHERE id = ?`,
			duck.NullString(p.Title), duck.NullString(p.SourceFormat), domain.SourceID(p.SourceID, p.Metadata, p.SourceFormat),
			string(meta), p.TraceID, e.RecordedAt, p.TraceID); err != nil {
			return err
		}
		return reassess(ctx, tx, p.TraceID, p.Metadata)
	}),
	events.TraceTitled: onLenient(func(ctx context.Context, tx *duck.Tx, e events.Envelope, p events.TraceTitledV1) error {
		tx.Touch(p.TraceID)
		return tx.Exec(ctx, `UPDATE main.traces SET title = ? WHERE id = ?`, p.Title, p.TraceID)
	}),
	// Consent is the `contribute` column of `traces`.
	events.TraceContributionSet: on(func(ctx context.Context, tx *duck.Tx, e events.Envelope, p events.TraceContributionSetV1) error {
		tx.Touch(p.TraceID)
		return tx.Exec(ctx, `UPDATE main.traces SET contribute = ? WHERE id = ?`, p.Contribute, p.TraceID)
	}),
	// An erased account's file loses every row (issue 37).
	events.AccountErased: func(ctx context.Context, w *writer, e events.Envelope) error {
		// Its traces were erased before the tombstone; what is left
		// (criteria, members) goes, and the file is rewritten after.
		for _, t := range erasedAccountTables {
			if err := w.tx.Exec(ctx, `DELETE FROM main.`+t); err != nil {
				return err
			}
		}
		return nil
	},
	events.TraceDeleted: on(func(ctx context.Context, tx *duck.Tx, e events.Envelope, p events.TraceDeletedV1) error {
		tx.Touch(p.TraceID)
		if err := tx.Exec(ctx, `DELETE FROM main._trace_revisions WHERE trace_id = ?`, p.TraceID); err != nil {
			return err
		}
		return tx.DeleteTrace(ctx, p.TraceID)
	}),
	events.TracesScored: on(func(ctx context.Context, tx *duck.Tx, e events.Envelope, p events.TracesScoredV1) error {
		// Latest per (trace, model), and only for the current revision.
		cur, err := currentOf(ctx, tx, p.Scores, func(s events.TraceScore) string { return s.TraceID })
		if err != nil {
			return err
		}
		var rows []duck.TraceScore
		for _, sc := range lastPer(p.Scores, func(s events.TraceScore) string { return s.TraceID }) {
			if rev, ok := cur[sc.TraceID]; ok && rev == sc.Revision {
				rows = append(rows, duck.TraceScore{TraceID: sc.TraceID, Score: sc.Score})
			}
		}
		return tx.ReplaceTraceScores(ctx, p.ModelID, p.ModelName, e.RecordedAt, rows)
	}),
	events.ActionsScored: on(func(ctx context.Context, tx *duck.Tx, e events.Envelope, p events.ActionsScoredV1) error {
		cur, err := currentOf(ctx, tx, p.Scores, func(s events.ActionScore) string { return s.TraceID })
		if err != nil {
			return err
		}
		var rows []duck.StepScore
		for _, sc := range lastPer(p.Scores, func(s events.ActionScore) string { return s.StepID }) {
			if rev, ok := cur[sc.TraceID]; ok && rev == sc.Revision {
				rows = append(rows, duck.StepScore{TraceID: sc.TraceID, StepID: sc.StepID, Score: sc.Score, Credit: sc.Credit})
			}
		}
		return tx.ReplaceActionScores(ctx, p.ModelID, p.ModelName, e.RecordedAt, rows)
	}),
	// The shared evaluator's automatic scores.
	events.EvaluatorTraceScored: onLenient(func(ctx context.Context, tx *duck.Tx, e events.Envelope, p events.EvaluatorTraceScoredV1) error {
		// Only the current revision's scores land; they replace the
		// trace's earlier ones (an earlier release's).
		cur, err := tx.CurrentRevisions(ctx, []string{p.TraceID})
		if err != nil {
			return err
		}
		if rev, ok := cur[p.TraceID]; !ok || rev != p.TraceRevision {
			return nil
		}
		if err := tx.Exec(ctx, `DELETE FROM main.evaluator_scores WHERE trace_id = ?`, p.TraceID); err != nil {
			return err
		}
		rows := make([]duck.StepScore, len(p.Scores))
		for i, sc := range p.Scores {
			rows[i] = duck.StepScore{TraceID: p.TraceID, StepID: sc.StepID, Score: sc.Score, Credit: sc.Credit}
		}
		return tx.InsertEvaluatorScores(ctx, p.Release, p.TraceRevision, e.RecordedAt, rows)
	}),
	// Model-made labels rescore the trace.
	events.TraceStepsLabeled: onLenient(func(ctx context.Context, tx *duck.Tx, e events.Envelope, p events.TraceStepsLabeledV1) error {
		tx.Touch(p.TraceID)
		return putChunksAndReassess(ctx, tx, p.TraceID, p.Labels, func(l labels.Label) (string, any) { return l.ChunkID, l }, tx.PutStoredLabels)
	}),
	// A grading model's quality checks rescore the trace's step scores.
	events.TraceStepsQualityChecked: onLenient(func(ctx context.Context, tx *duck.Tx, e events.Envelope, p events.TraceStepsQualityCheckedV1) error {
		tx.Touch(p.TraceID)
		return putChunksAndReassess(ctx, tx, p.TraceID, p.Checks, func(c stepscores.Check) (string, any) {
			c.Model = p.Model
			return c.ChunkID, c
		}, tx.PutQualityChecks)
	}),
	events.AnnotationAdded: on(func(ctx context.Context, tx *duck.Tx, e events.Envelope, p events.AnnotationAddedV1) error {
		tx.TouchAnnotation(p.AnnotationID)
		row := duck.AnnotationRow{ID: p.AnnotationID, TraceID: p.TraceID, Rating: p.Rating, Comment: p.Comment,
			AuthorID: p.AuthorID, AuthorName: p.AuthorName, CreatedAt: e.RecordedAt, Value: criteria.ValueText(p.Value)}
		if p.CriterionID != "" {
			row.CriterionID = &p.CriterionID
		}
		if p.Quote != nil {
			row.Quote = p.Quote
		}
		if p.StepID != "" {
			row.StepID = new(p.StepID)
			idx, err := tx.StepIndex(ctx, p.TraceID, p.StepID)
			if err != nil {
				return err
			}
			row.StepIndex = idx // nil if the step is gone: the row still says which step
		}
		return tx.UpsertAnnotation(ctx, row)
	}),
	events.AnnotationEdited: on(func(ctx context.Context, tx *duck.Tx, e events.Envelope, p events.AnnotationEditedV1) error {
		tx.TouchAnnotation(p.AnnotationID)
		return tx.Exec(ctx, `UPDATE main.annotations SET rating = ?, comment = ?, label_error = ?, label_error_note = ?,
		value = CASE WHEN criterion_id IS NULL THEN NULL ELSE ? END
		WHERE id = ?`, duck.Deref(p.Rating), duck.Deref(p.Comment), p.LabelError, duck.Deref(p.LabelErrorNote),
			duck.Deref(criteria.ValueText(p.Value)), p.AnnotationID)
	}),
	// The account's criteria (the `criteria` table; a label rename renames
	// the values in `annotations`).
	events.CriterionDefined:  defineCriterion,
	events.CriterionChanged:  changeCriterion,
	events.CriterionArchived: archiveCriterion,
	// The account's members (the `members` table).
	events.UserCreated:       addAdmin,
	events.MemberAdded:       addMember,
	events.MemberRoleChanged: changeMemberRole,
	events.MemberRemoved:     removeMember,
	events.AnnotationRemoved: on(func(ctx context.Context, tx *duck.Tx, e events.Envelope, p events.AnnotationRemovedV1) error {
		tx.TouchAnnotation(p.AnnotationID)
		return tx.DeleteAnnotation(ctx, p.AnnotationID)
	}),
}

// erasedAccountTables are the tables of an owner's file that account
// erasure empties: every table a user's SQL sees, and the bookkeeping that
// names traces (the applied event ids stay, so a redelivered event of the
// erased account changes nothing).
var erasedAccountTables = []string{"traces", "steps", "annotations", "criteria", "scores", "action_scores", "step_labels",
	"evaluator_scores", "task_scores", "members", "_trace_revisions", "_step_labels", "_step_quality_checks"}

// Handles reports whether the snapshot projection applies events of type t
// (the query process is sent only those).
func Handles(t string) bool { return appliers[t] != nil }

// Apply applies a Kafka batch: its events are grouped by owner (one owner's
// events keep their order) and each owner's group is applied in one DuckDB
// transaction with its event ids, so a redelivered event changes nothing and
// a failure leaves that owner's file as it was (the batch is retried).
func (p *Projection) Apply(ctx context.Context, envs []events.Envelope) error {
	var order []string
	groups := map[string][]events.Envelope{}
	for _, e := range envs {
		if !Handles(e.Type) || e.OwnerID == "" {
			continue
		}
		if _, ok := groups[e.OwnerID]; !ok {
			order = append(order, e.OwnerID)
		}
		groups[e.OwnerID] = append(groups[e.OwnerID], e)
	}
	for _, owner := range order {
		if err := p.applyOwner(ctx, owner, groups[owner]); err != nil {
			return err
		}
	}
	return nil
}

func (p *Projection) applyOwner(ctx context.Context, owner string, envs []events.Envelope) error {
	ids := make([]string, len(envs))
	for i, e := range envs {
		ids[i] = e.ID
	}
	_, err := p.snaps.ApplyBatch(ctx, owner, ids, func(tx *duck.Tx, fresh []int) error {
		w := &writer{tx: tx, pending: map[string]*pendingTrace{}}
		for _, i := range fresh {
			e, err := eventstore.Resolve(ctx, p.blobs, p.keys, envs[i])
			if eventstore.IsErased(err) {
				continue // an erased event projects nothing
			}
			if err != nil {
				return err
			}
			if err := w.apply(ctx, e); err != nil {
				return fmt.Errorf("snapshot: apply %s %s: %w", e.Type, e.ID, err)
			}
		}
		return w.flush(ctx)
	})
	if err != nil {
		return err
	}
	if slices.ContainsFunc(envs, func(e events.Envelope) bool { return e.Type == events.TraceDeleted || e.Type == events.AccountErased }) {
		// A deleted trace's rows must leave the file, not only the table.
		return p.snaps.Shred(ctx, owner)
	}
	return nil
}

// pendingTrace is an imported trace not yet written: imports are buffered
// and written in bulk (appender) when the batch ends or before any event
// that reads or changes existing rows.
type pendingTrace struct {
	row   duck.TraceRow
	steps []duck.StepRow
	// records and meta are what the automatic annotation is derived from.
	records []events.StepRecord
	meta    map[string]any
}

type writer struct {
	tx        *duck.Tx
	order     []string
	pending   map[string]*pendingTrace
	revisions []any // trace id, revision pairs of buffered imports
}

func (w *writer) flush(ctx context.Context) error {
	if len(w.order) == 0 {
		return nil
	}
	w.tx.Touch(w.order...)
	// One statement per 500 imported traces for their revisions.
	for pairs := range slices.Chunk(w.revisions, 1000) {
		values := strings.TrimSuffix(strings.Repeat("(?, ?), ", len(pairs)/2), ", ")
		if err := w.tx.Exec(ctx, `INSERT OR REPLACE INTO main._trace_revisions VALUES `+values, pairs...); err != nil {
			return err
		}
	}
	w.revisions = w.revisions[:0]
	// An import follows a deletion (or nothing), so usually no row exists;
	// one that does (a replayed import after a lost deletion) is replaced.
	existing, err := w.tx.ExistingTraces(ctx, w.order)
	if err != nil {
		return err
	}
	if err := w.tx.DeleteTraces(ctx, slices.Collect(maps.Keys(existing))); err != nil {
		return err
	}
	traces := make([]duck.TraceRow, 0, len(w.order))
	var steps []duck.StepRow
	for _, id := range w.order {
		pt := w.pending[id]
		traces = append(traces, pt.row)
		steps = append(steps, pt.steps...)
	}
	if err := w.tx.InsertTraces(ctx, traces); err != nil {
		return err
	}
	if err := w.tx.AppendSteps(ctx, steps); err != nil {
		return err
	}
	for _, id := range w.order {
		pt := w.pending[id]
		if err := assessRecords(ctx, w.tx, id, pt.records, pt.meta); err != nil {
			return err
		}
	}
	w.order = w.order[:0]
	clear(w.pending)
	return nil
}

func (w *writer) apply(ctx context.Context, e events.Envelope) error {
	if e.Type != events.TraceImported {
		if err := w.flush(ctx); err != nil {
			return err
		}
	}
	if a := appliers[e.Type]; a != nil {
		return a(ctx, w, e)
	}
	return nil
}

// applier applies one event to an owner's file.
type applier func(ctx context.Context, w *writer, e events.Envelope) error

// on is an applier of a payload P, decoded strictly (an unreadable
// payload is an events.UnreadableError).
func on[P any](fn func(ctx context.Context, tx *duck.Tx, e events.Envelope, p P) error) applier {
	return func(ctx context.Context, w *writer, e events.Envelope) error {
		var p P
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		return fn(ctx, w.tx, e, p)
	}
}

// touchAllOn is on for an event that may change every trace's rows.
func touchAllOn[P any](fn func(ctx context.Context, tx *duck.Tx, e events.Envelope, p P) error) applier {
	apply := on(fn)
	return func(ctx context.Context, w *writer, e events.Envelope) error {
		w.tx.TouchAll()
		return apply(ctx, w, e)
	}
}

// onLenient is on for the payloads a worker reports (labels, quality
// checks, scores, titles), whose decoding error is returned as it is.
func onLenient[P any](fn func(ctx context.Context, tx *duck.Tx, e events.Envelope, p P) error) applier {
	return func(ctx context.Context, w *writer, e events.Envelope) error {
		var p P
		if err := e.Decode(&p); err != nil {
			return err
		}
		return fn(ctx, w.tx, e, p)
	}
}

func stepRows(traceID string, steps []events.StepRecord) []duck.StepRow {
	out := make([]duck.StepRow, len(steps))
	for i, s := range steps {
		out[i] = duck.StepRow{ID: s.ID, TraceID: traceID, Index: s.Index, Role: string(s.Role), Content: s.Content,
			ToolName: s.ToolName, ToolCallID: s.ToolCallID}
		if len(s.ToolInput) > 0 {
			out[i].ToolInput = s.ToolInput
		}
		if len(s.Metadata) > 0 {
			out[i].Metadata = s.Metadata
			out[i].Model, _ = s.Metadata["model"].(string)
			if u, ok := s.Metadata["usage"].(map[string]any); ok {
				out[i].InputTokens = tokenCount(u["input_tokens"])
				out[i].OutputTokens = tokenCount(u["output_tokens"])
				out[i].TotalTokens = tokenCount(u["total_tokens"])
				out[i].CachedTokens = tokenCount(u["cached_input_tokens"])
			}
		}
	}
	return out
}

// tokenCount reads a token count of a step's metadata.usage (as decoded
// from the event: a JSON number of whatever Go type) for its steps column;
// nil (SQL NULL) when absent or not a whole count that fits the column.
func tokenCount(v any) *int32 {
	var n int64
	switch x := v.(type) {
	case int64:
		n = x
	case int:
		n = int64(x)
	case float64:
		if x != math.Trunc(x) || x < 0 || x > math.MaxInt32 {
			return nil
		}
		n = int64(x)
	case json.Number:
		i, err := x.Int64()
		if err != nil {
			return nil
		}
		n = i
	default:
		return nil
	}
	if n < 0 || n > math.MaxInt32 {
		return nil
	}
	c := int32(n)
	return &c
}

// objectOrEmpty keeps trace metadata a JSON object ({} when absent), as the
// REST API shows it.
func objectOrEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// Replay rebuilds every owner's snapshot from the whole event log into a new
// directory and swaps it in only when complete (duck.Rebuild), so a failed
// replay leaves the old snapshots. The directory must not be in use: stop
// `critic serve` first (duck.ErrLocked otherwise). It returns how many events
// it read.
func Replay(ctx context.Context, dir string, store *eventstore.Store, log *slog.Logger) (int, error) {
	n := 0
	err := duck.Rebuild(ctx, dir, duck.Options{}, func(ctx context.Context, s *duck.Snapshots) error {
		p := New(s, store.Blobs(), log).WithKeyring(store.Keyring())
		// Events an operator skipped are left out, as the live projection's
		// guard leaves them out.
		skipped, err := projections.LoadSkipped(ctx, store)
		if err != nil {
			return err
		}
		var after int64
		for {
			batch, err := store.ReadAfter(ctx, after, 5000)
			if err != nil {
				return err
			}
			if len(batch) == 0 {
				// The rebuilt files hold every event up to the last one read.
				return WritePosition(s.Dir(), after)
			}
			if err := p.Apply(ctx, skipped.Without(batch)); err != nil {
				return err
			}
			n += len(batch)
			after = batch[len(batch)-1].Seq
		}
	})
	return n, err
}

// setRevision records a trace's current revision (hidden table).
func setRevision(ctx context.Context, tx *duck.Tx, traceID string, revision int) error {
	return tx.Exec(ctx, `INSERT OR REPLACE INTO main._trace_revisions VALUES (?, ?)`, traceID, revision)
}
