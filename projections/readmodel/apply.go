package readmodel

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/platform/jsonscan"
	"github.com/criticml/critic/platform/pg"
	"github.com/criticml/critic/projections"
)

// writer applies events inside one transaction. Step rows of imports are
// buffered and written with COPY, flushed before any event that could touch
// rows already buffered, so order is preserved and bulk imports stay fast.
type writer struct {
	tx     pgx.Tx
	traces [][]any
	steps  [][]any
}

var traceCols = []string{"id", "owner_id", "external_id", "title", "source_format", "source_id", "metadata",
	"revision", "step_count", "created_at", "updated_at", "import_seq"}

var stepCols = []string{"id", "trace_id", "owner_id", "idx", "role", "content", "tool_name", "tool_input", "tool_call_id", "metadata"}

func (w *writer) flush(ctx context.Context) error {
	if len(w.traces) > 0 {
		if _, err := w.tx.CopyFrom(ctx, pgx.Identifier{"rm_traces"}, traceCols, pgx.CopyFromRows(w.traces)); err != nil {
			return err
		}
		w.traces = w.traces[:0]
	}
	if len(w.steps) > 0 {
		if _, err := w.tx.CopyFrom(ctx, pgx.Identifier{"rm_steps"}, stepCols, pgx.CopyFromRows(w.steps)); err != nil {
			return err
		}
		w.steps = w.steps[:0]
	}
	return nil
}

func (w *writer) bufferSteps(traceID, ownerID string, steps []events.StepRecord) {
	tr, ow := pg.UUIDArg(traceID), pg.UUIDArg(ownerID)
	for _, s := range steps {
		w.steps = append(w.steps, []any{pg.UUIDArg(s.ID), tr, ow, s.Index, string(s.Role), s.Content,
			nilIfEmpty(s.ToolName), toolInputOrNil(s.ToolInput), nilIfEmpty(s.ToolCallID), jsonOrNil(s.Metadata)})
	}
}

// toolInputOrNil is SQL NULL for a step without tool input and the JSON
// object otherwise — an empty object included, since a call with no
// arguments must export as `tool_input: {}`.
func toolInputOrNil(m map[string]any) any {
	if m == nil {
		return nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil
	}
	return string(b)
}

// importedTrace is events.TraceImportedV1 as the read model decodes it: the
// steps' free-form objects stay raw JSON and go to their jsonb columns as
// they are, instead of being decoded into maps and encoded again.
type importedTrace struct {
	projections.ImportedHeader
	Steps []importedStep `json:"steps"`
}

// importedStep is events.StepRecord (with domain.Step's fields inline).
type importedStep struct {
	ID         string          `json:"id"`
	Index      int             `json:"index"`
	Role       string          `json:"role"`
	Content    string          `json:"content"`
	ToolName   string          `json:"tool_name"`
	ToolInput  json.RawMessage `json:"tool_input"`
	ToolCallID string          `json:"tool_call_id"`
	Metadata   json.RawMessage `json:"metadata"`
}

func (w *writer) bufferImportedSteps(traceID, ownerID string, steps []importedStep) error {
	tr, ow := pg.UUIDArg(traceID), pg.UUIDArg(ownerID)
	for _, s := range steps {
		in, err := rawObjectOrNil(s.ToolInput)
		if err != nil {
			return fmt.Errorf("step %s tool_input: %w", s.ID, err)
		}
		if in == nil && isEmptyObject(s.ToolInput) {
			in = "{}" // a call with no arguments keeps tool_input {}
		}
		meta, err := rawObjectOrNil(s.Metadata)
		if err != nil {
			return fmt.Errorf("step %s metadata: %w", s.ID, err)
		}
		w.steps = append(w.steps, []any{pg.UUIDArg(s.ID), tr, ow, s.Index, s.Role, s.Content,
			nilIfEmpty(s.ToolName), in, nilIfEmpty(s.ToolCallID), meta})
	}
	return nil
}

// rawObjectOrNil is jsonOrNil for a map[string]any field kept raw: SQL NULL
// for an absent, null or empty object, the JSON text otherwise (jsonb
// normalizes it exactly as it would the re-encoded map).
func rawObjectOrNil(raw json.RawMessage) (any, error) {
	i := jsonscan.SkipSpace(raw, 0)
	if i == len(raw) || string(raw[i:]) == "null" {
		return nil, nil
	}
	if raw[i] != '{' {
		return nil, fmt.Errorf("expected a JSON object")
	}
	if j := jsonscan.SkipSpace(raw, i+1); j < len(raw) && raw[j] == '}' {
		return nil, nil
	}
	return string(raw), nil
}

// isEmptyObject reports whether raw is `{}` (with any white space).
func isEmptyObject(raw json.RawMessage) bool {
	i := jsonscan.SkipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return false
	}
	j := jsonscan.SkipSpace(raw, i+1)
	return j < len(raw) && raw[j] == '}' && jsonscan.SkipSpace(raw, j+1) == len(raw)
}

func (w *writer) apply(ctx context.Context, e events.Envelope) error {
	if e.Type != events.TraceImported {
		if err := w.flush(ctx); err != nil {
			return err
		}
	}
	if a, ok := appliers[e.Type]; ok {
		return a(ctx, w, e)
	}
	return nil
}

// coreAppliers project accounts, keys, traces, annotations, the shared
// evaluator and skipped events.
var coreAppliers = map[string]applier{
	// The skipped event counts as handled (passed over), so the lag, the
	// standby's and a write's catch-up never try it again; a replay reaches
	// the same row through the same skip event.
	events.ProjectionEventSkipped: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.ProjectionEventSkippedV1) error {
		return exec(ctx, tx, `INSERT INTO readmodel_applied (event_id, seq) VALUES ($1, $2) ON CONFLICT DO NOTHING`, p.EventID, p.Seq)
	}),
	events.UserCreated: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.UserCreatedV1) error {
		_, err := tx.Exec(ctx, `INSERT INTO rm_users (id, name, reward_models_enabled, created_at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (id) DO NOTHING`, p.UserID, p.Name, p.RewardModelsEnabled, e.RecordedAt)
		if err != nil {
			return err
		}
		return applyImplicitAdmin(ctx, tx, e, p)
	}),
	events.MemberAdded:       applyMemberAdded,
	events.MemberRoleChanged: applyMemberRoleChanged,
	events.MemberRemoved:     applyMemberRemoved,
	events.APIKeyIssued: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.APIKeyIssuedV1) error {
		return exec(ctx, tx, `INSERT INTO rm_api_keys (key_hash, key_id, user_id, read_only, created_at, key_prefix, member_id) VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT DO NOTHING`, p.KeyHash, p.KeyID, p.UserID, p.ReadOnly, e.RecordedAt, nilIfEmpty(p.KeyPrefix), nilIfEmpty(p.MemberID))
	}),
	events.APIKeyRevoked: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.APIKeyRevokedV1) error {
		return exec(ctx, tx, `UPDATE rm_api_keys SET revoked = true, revoked_at = COALESCE(revoked_at, $2) WHERE key_id = $1`, p.KeyID, e.RecordedAt)
	}),
	events.UserRewardModelsEnabledChanged: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.UserRewardModelsEnabledChangedV1) error {
		return exec(ctx, tx, `UPDATE rm_users SET reward_models_enabled = $2 WHERE id = $1`, p.UserID, p.Enabled)
	}),
	events.TraceImported: applyTraceImported,
	events.TraceRevised:  applyTraceRevised,
	events.TraceDeleted: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.TraceDeletedV1) error {
		return execAll(ctx, tx, []string{`DELETE FROM rm_steps WHERE trace_id = $1`, `DELETE FROM rm_spans WHERE trace_id = $1`,
			`DELETE FROM rm_annotations WHERE trace_id = $1`, `DELETE FROM rm_trace_scores WHERE trace_id = $1`,
			`DELETE FROM rm_action_scores WHERE trace_id = $1`, `DELETE FROM rm_scoring_runs WHERE trace_id = $1`, `DELETE FROM rm_step_labels WHERE trace_id = $1`, `DELETE FROM rm_step_quality_checks WHERE trace_id = $1`, `DELETE FROM rm_trace_labeling WHERE trace_id = $1`, `DELETE FROM rm_assessments WHERE trace_id = $1`,
			`DELETE FROM rm_comparisons WHERE trace_id = $1`, `DELETE FROM rm_evaluator_scores WHERE trace_id = $1`, `DELETE FROM rm_evaluator_scoring WHERE trace_id = $1`,
			`DELETE FROM rm_traces WHERE id = $1`}, p.TraceID)
	}),
	events.EvaluatorBenchmarkFrozen: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.EvaluatorBenchmarkFrozenV1) error {
		counts, err := json.Marshal(p.SliceCounts)
		if err != nil {
			return err
		}
		return exec(ctx, tx, `INSERT INTO rm_evaluator_benchmarks (version, as_of_seq, items, slice_counts, frozen_at)
			VALUES ($1, $2, $3, $4, $5) ON CONFLICT (version) DO NOTHING`, p.Version, p.AsOfSeq, len(p.Items), counts, e.RecordedAt)
	}),
	events.EvaluatorReleased: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.EvaluatorReleasedV1) error {
		overall, err := json.Marshal(p.Overall)
		if err != nil {
			return err
		}
		slices, err := json.Marshal(p.Slices)
		if err != nil {
			return err
		}
		policy, err := json.Marshal(p.Policy)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE rm_evaluator_releases SET live = false WHERE live`); err != nil {
			return err
		}
		return exec(ctx, tx, `INSERT INTO rm_evaluator_releases (release, candidate_id, benchmark_version, replaces, overall, slices, policy, live, released_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, true, $8) ON CONFLICT (release) DO NOTHING`,
			p.Release, p.CandidateID, p.BenchmarkVersion, p.Replaces, overall, slices, policy, e.RecordedAt)
	}),
	events.EvaluatorTraceScored: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.EvaluatorTraceScoredV1) error {
		if _, err := tx.Exec(ctx, `DELETE FROM rm_evaluator_scores WHERE trace_id = $1`, p.TraceID); err != nil {
			return err
		}
		for _, sc := range p.Scores {
			if _, err := tx.Exec(ctx, `INSERT INTO rm_evaluator_scores (trace_id, owner_id, step_id, release, trace_revision, score, credit, scored_at)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, p.TraceID, e.OwnerID, sc.StepID, p.Release, p.TraceRevision, sc.Score, sc.Credit, e.RecordedAt); err != nil {
				return err
			}
		}
		return exec(ctx, tx, `INSERT INTO rm_evaluator_scoring (trace_id, owner_id, release, trace_revision, status, error, at)
			VALUES ($1, $2, $3, $4, 'scored', NULL, $5) ON CONFLICT (trace_id) DO UPDATE SET release = EXCLUDED.release,
			trace_revision = EXCLUDED.trace_revision, status = EXCLUDED.status, error = NULL, at = EXCLUDED.at`,
			p.TraceID, e.OwnerID, p.Release, p.TraceRevision, e.RecordedAt)
	}),
	events.EvaluatorTraceScoringFailed: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.EvaluatorTraceScoringFailedV1) error {
		return exec(ctx, tx, `INSERT INTO rm_evaluator_scoring (trace_id, owner_id, release, trace_revision, status, error, at)
			VALUES ($1, $2, $3, $4, 'failed', $5, $6) ON CONFLICT (trace_id) DO UPDATE SET release = EXCLUDED.release,
			trace_revision = EXCLUDED.trace_revision, status = EXCLUDED.status, error = EXCLUDED.error, at = EXCLUDED.at`,
			p.TraceID, e.OwnerID, p.Release, p.TraceRevision, p.Error, e.RecordedAt)
	}),
	events.EvaluatorRolledBack: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.EvaluatorRolledBackV1) error {
		if _, err := tx.Exec(ctx, `UPDATE rm_evaluator_releases SET live = false, rolled_back_at = $2 WHERE release = $1`, p.From, e.RecordedAt); err != nil {
			return err
		}
		return exec(ctx, tx, `UPDATE rm_evaluator_releases SET live = true WHERE release = $1`, p.To)
	}),
	events.ComparisonReviewed: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.ComparisonReviewedV1) error {
		raw, err := json.Marshal(p)
		if err != nil {
			return err
		}
		return exec(ctx, tx, `INSERT INTO rm_comparisons (id, owner_id, trace_id, trace_revision, step_id, reviewer_id, finding_id, model_id,
			comparison, created_at, seq) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT DO NOTHING`,
			p.ComparisonID, e.OwnerID, p.TraceID, p.TraceRevision, p.StepID, p.ReviewerID, p.FindingID, p.ModelID, raw, e.RecordedAt, e.Seq)
	}),
	events.TraceContributionSet: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.TraceContributionSetV1) error {
		return exec(ctx, tx, `UPDATE rm_traces SET contribute = $2 WHERE id = $1`, p.TraceID, p.Contribute)
	}),
	events.TraceSourceRenamed: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.TraceSourceRenamedV1) error {
		return exec(ctx, tx, `INSERT INTO rm_trace_sources (owner_id, source_id, name) VALUES ($1, $2, $3)
			ON CONFLICT (owner_id, source_id) DO UPDATE SET name = EXCLUDED.name`, e.OwnerID, p.SourceID, p.Name)
	}),
	events.AnnotationAdded: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.AnnotationAddedV1) error {
		var quote any
		if p.Quote != nil {
			quote = jsonOrNil(p.Quote)
		}
		return exec(ctx, tx, `INSERT INTO rm_annotations (id, trace_id, owner_id, step_id, rating, comment, quote, author_id, author_name,
			trace_revision, created_at, seq, criterion_id, value) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
			p.AnnotationID, p.TraceID, e.OwnerID, nilIfEmpty(p.StepID), p.Rating, p.Comment, quote, p.AuthorID, p.AuthorName,
			p.TraceRevision, e.RecordedAt, e.Seq, nilIfEmpty(p.CriterionID), jsonOrNil(p.Value))
	}),
	events.AnnotationEdited: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.AnnotationEditedV1) error {
		return exec(ctx, tx, `UPDATE rm_annotations SET rating = $2, comment = $3, label_error = $4, label_error_note = $5,
			value = CASE WHEN criterion_id IS NULL THEN NULL ELSE $6::jsonb END WHERE id = $1`,
			p.AnnotationID, p.Rating, p.Comment, p.LabelError, p.LabelErrorNote, jsonOrNil(p.Value))
	}),
	events.AnnotationRemoved: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.AnnotationRemovedV1) error {
		return exec(ctx, tx, `DELETE FROM rm_annotations WHERE id = $1`, p.AnnotationID)
	}),
}

// applyTraceImported buffers the trace's row and steps for one COPY with
// the batch's other imports.
func applyTraceImported(ctx context.Context, w *writer, e events.Envelope) error {
	tx := w.tx
	var p importedTrace
	if err := projections.DecodeImported(e, &p, decodeImportedFast); err != nil {
		return err
	}
	// trace.deleted removed any earlier row of this id, so this is an insert.
	meta := jsonOrNil(p.Metadata)
	if meta == nil {
		meta = "{}"
	}
	w.traces = append(w.traces, []any{pg.UUIDArg(p.TraceID), pg.UUIDArg(e.OwnerID), nilIfEmpty(p.ExternalID), p.Title, p.SourceFormat,
		domain.SourceID(p.SourceID, p.Metadata, p.SourceFormat), meta, p.Revision, len(p.Steps), e.RecordedAt, e.RecordedAt, e.Seq})
	if err := w.bufferImportedSteps(p.TraceID, e.OwnerID, p.Steps); err != nil {
		return err
	}
	return insertSpans(ctx, tx, p.TraceID, p.Spans)
}

// applyTraceRevised replaces (or, appending, extends) a trace's steps and
// spans and drops its now stale whole-trace scores.
func applyTraceRevised(ctx context.Context, w *writer, e events.Envelope) error {
	var p events.TraceRevisedV1
	if err := e.DecodeOrFail(&p); err != nil {
		return err
	}
	tx := w.tx
	if p.Mode != events.RevisionAppended {
		if err := execAll(ctx, tx, []string{`DELETE FROM rm_steps WHERE trace_id = $1`, `DELETE FROM rm_action_scores WHERE trace_id = $1`}, p.TraceID); err != nil {
			return err
		}
	}
	// A new revision makes the whole-trace scores stale.
	if _, err := tx.Exec(ctx, `DELETE FROM rm_trace_scores WHERE trace_id = $1`, p.TraceID); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `UPDATE rm_traces SET title = $2, source_format = $3, source_id = $4,
		metadata = COALESCE($5::jsonb, '{}'), revision = $6, updated_at = $7 WHERE id = $1`,
		p.TraceID, p.Title, p.SourceFormat, domain.SourceID(p.SourceID, p.Metadata, p.SourceFormat),
		jsonOrNil(p.Metadata), p.Revision, e.RecordedAt); err != nil {
		return err
	}
	w.bufferSteps(p.TraceID, e.OwnerID, p.Steps)
	if err := w.flush(ctx); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `UPDATE rm_traces SET step_count = (SELECT count(*) FROM rm_steps WHERE trace_id = $1) WHERE id = $1`, p.TraceID); err != nil {
		return err
	}
	if p.SpansDelta {
		if err := upsertSpans(ctx, tx, p.TraceID, p.Spans); err != nil {
			return err
		}
		return orderSpans(ctx, tx, p.TraceID, p.SpanOrder)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM rm_spans WHERE trace_id = $1`, p.TraceID); err != nil {
		return err
	}
	return insertSpans(ctx, tx, p.TraceID, p.Spans)
}

func insertSpans(ctx context.Context, tx pgx.Tx, traceID string, spans []domain.Span) error {
	return writeSpans(ctx, tx, traceID, spans, 0, `INSERT INTO rm_spans (trace_id, span_id, parent_id, name, kind, start_ns, end_ns, input, output, step_indices, ord)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`)
}

// upsertSpans applies a revision's span delta (events.TraceRevisedV1
// SpansDelta): a changed span is rewritten where it stands (its ord kept),
// a new one is ordered after every stored span.
func upsertSpans(ctx context.Context, tx pgx.Tx, traceID string, spans []domain.Span) error {
	if len(spans) == 0 {
		return nil
	}
	var next int
	if err := tx.QueryRow(ctx, `SELECT COALESCE(max(ord) + 1, 0) FROM rm_spans WHERE trace_id = $1`, traceID).Scan(&next); err != nil {
		return err
	}
	return writeSpans(ctx, tx, traceID, spans, next, `INSERT INTO rm_spans (trace_id, span_id, parent_id, name, kind, start_ns, end_ns, input, output, step_indices, ord)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
		ON CONFLICT (trace_id, span_id) DO UPDATE SET parent_id = EXCLUDED.parent_id, name = EXCLUDED.name, kind = EXCLUDED.kind,
			start_ns = EXCLUDED.start_ns, end_ns = EXCLUDED.end_ns, input = EXCLUDED.input, output = EXCLUDED.output,
			step_indices = EXCLUDED.step_indices`)
}

// orderSpans gives a trace's spans the places a revision's SpanOrder names
// (none: they keep theirs), rewriting only the ord of those that moved.
func orderSpans(ctx context.Context, tx pgx.Tx, traceID string, order []string) error {
	if len(order) == 0 {
		return nil
	}
	return exec(ctx, tx, `UPDATE rm_spans s SET ord = o.ord - 1
		FROM unnest($2::text[]) WITH ORDINALITY AS o(span_id, ord)
		WHERE s.trace_id = $1 AND s.span_id = o.span_id AND s.ord <> o.ord - 1`, traceID, order)
}

// writeSpans runs one statement per span in a single round trip, the i-th
// span ordered at from+i.
func writeSpans(ctx context.Context, tx pgx.Tx, traceID string, spans []domain.Span, from int, sql string) error {
	if len(spans) == 0 {
		return nil
	}
	batch := &pgx.Batch{}
	for i, s := range spans {
		idx := s.StepIndices
		if idx == nil {
			idx = []int{}
		}
		batch.Queue(sql, traceID, s.ID, s.ParentID, s.Name, s.Kind, s.StartNs, s.EndNs, jsonOrNil(s.Input), jsonOrNil(s.Output), idx, from+i)
	}
	return tx.SendBatch(ctx, batch).Close()
}
