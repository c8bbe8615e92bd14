package snapshot

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/assessment"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/labels"
	"github.com/criticml/critic/domain/stepscores"
	"github.com/criticml/critic/platform/duck"
)

// The automatic annotation of a trace (step_labels, task_scores) is derived
// from its steps by domain/assessment, the same code GET /traces/{id} runs,
// and rewritten whenever the steps change (import, re-import, session sync,
// OTLP rebuild). Labels the trace carries in step metadata are used as they
// are; a trace without labels has no rows.

// writeAssessment replaces the trace's rows from its steps, metadata and
// the model-made labels recorded for it. fresh says the trace was just
// inserted (no rows and no recorded labels can exist yet), which saves a
// bulk import three statements per trace.
func writeAssessment(ctx context.Context, tx *duck.Tx, traceID string, steps []domain.Step, ids []string, meta map[string]any, fresh bool) error {
	raw, rawChecks := map[string]json.RawMessage{}, map[string]json.RawMessage{}
	if !fresh {
		var err error
		if raw, err = tx.StoredLabels(ctx, traceID); err != nil {
			return err
		}
		if rawChecks, err = tx.QualityChecks(ctx, traceID); err != nil {
			return err
		}
	}
	checks := make(map[string]stepscores.Check, len(rawChecks))
	for chunk, b := range rawChecks {
		var c stepscores.Check
		if err := json.Unmarshal(b, &c); err != nil {
			return fmt.Errorf("snapshot: stored quality check %s of %s: %w", chunk, traceID, err)
		}
		checks[chunk] = c
	}
	stored := make(map[string]labels.Label, len(raw))
	for chunk, b := range raw {
		var l labels.Label
		if err := json.Unmarshal(b, &l); err != nil {
			return fmt.Errorf("snapshot: stored label %s of %s: %w", chunk, traceID, err)
		}
		stored[chunk] = l
	}
	a := assessment.Of(steps, ids, meta, stored, checks)
	var rows []duck.StepLabelRow
	for _, r := range a.Rows(ids) {
		l := r.Label
		rows = append(rows, duck.StepLabelRow{TraceID: traceID, StepID: r.StepID, StepIndex: r.StepIndex,
			ChunkID: l.ChunkID, TaskID: l.TaskID, Actor: string(l.Actor),
			Intent: l.Intent, Verdict: l.Verdict, VerdictTarget: l.VerdictTarget, Sentiment: l.Sentiment,
			Type: l.Type, Effect: l.Effect, Result: l.Result, DuplicateOf: l.DuplicateOf, IsOutput: l.IsOutput,
			Outcome: l.Outcome, Stance: l.Stance, Coverage: l.Coverage, Evidence: l.Evidence, Note: l.Note,
			Score: r.Score, Credit: r.Credit, ExpectedCredit: r.ExpectedCredit})
	}
	var tasks []duck.TaskScoreRow
	if ss := a.StepScores; ss != nil {
		for _, t := range ss.Tasks {
			row := duck.TaskScoreRow{TraceID: traceID, TaskID: t.TaskID, AnswerStepIndex: t.AnswerIndex, AnswerPoints: t.AnswerPoints,
				Work: t.Work, Score: t.Score, Capped: t.Capped, TraceScore: ss.TraceScore, TraceOutcome: ss.Outcome,
				Policy: ss.Policy, Source: ss.Source}
			if t.FirstIndex >= 0 {
				row.FirstStepIndex = new(t.FirstIndex)
			}
			if t.LastIndex >= 0 {
				row.LastStepIndex = new(t.LastIndex)
			}
			tasks = append(tasks, row)
		}
	}
	if fresh {
		return tx.InsertAssessment(ctx, rows, tasks)
	}
	return tx.ReplaceAssessment(ctx, traceID, rows, tasks)
}

// carriesAssessment reports whether a trace as imported can have rows: it
// carries labels in its steps or a rubric summary. Labels a model records
// come later, as their own events.
func carriesAssessment(steps []domain.Step, meta map[string]any) bool {
	_, rubric := meta[assessment.RubricSummaryKey]
	return rubric || slices.ContainsFunc(steps, func(s domain.Step) bool {
		_, labeled := s.Metadata[labels.MetadataKey]
		return labeled
	})
}

// reassess rewrites a stored trace's rows from the steps now in the
// snapshot (after a revision appended or replaced them).
func reassess(ctx context.Context, tx *duck.Tx, traceID string, meta map[string]any) error {
	rows, err := tx.TraceSteps(ctx, traceID)
	if err != nil {
		return err
	}
	steps := make([]domain.Step, len(rows))
	ids := make([]string, len(rows))
	for i, r := range rows {
		s := domain.Step{Role: domain.Role(r.Role), Content: r.Content, ToolName: r.ToolName, ToolCallID: r.ToolCallID}
		for _, f := range []struct {
			raw any
			dst *map[string]any
		}{{r.ToolInput, &s.ToolInput}, {r.Metadata, &s.Metadata}} {
			raw, _ := f.raw.(json.RawMessage)
			if len(raw) == 0 || raw[0] != '{' {
				continue
			}
			if err := json.Unmarshal(raw, f.dst); err != nil {
				return fmt.Errorf("snapshot: step %s: %w", r.ID, err)
			}
		}
		steps[i], ids[i] = s, r.ID
	}
	return writeAssessment(ctx, tx, traceID, steps, ids, meta, false)
}

// assessRecords writes the rows of a freshly imported trace (flush deleted
// any earlier rows of its id), from the steps as the event carries them.
func assessRecords(ctx context.Context, tx *duck.Tx, traceID string, recs []events.StepRecord, meta map[string]any) error {
	steps := make([]domain.Step, len(recs))
	ids := make([]string, len(recs))
	for i, r := range recs {
		steps[i], ids[i] = r.Step, r.ID
	}
	if !carriesAssessment(steps, meta) {
		return nil
	}
	return writeAssessment(ctx, tx, traceID, steps, ids, meta, true)
}

// putChunksAndReassess stores a trace's per-chunk rows (labels or quality
// checks, each keyed by chunk id) with put and rescores the trace: both
// change what a step scores. Rows for a trace the snapshot no longer has
// (deleted since) are dropped.
func putChunksAndReassess[T any](ctx context.Context, tx *duck.Tx, traceID string, items []T, chunk func(T) (string, any),
	put func(context.Context, string, map[string]json.RawMessage) error) error {
	md, ok, err := tx.TraceMetadata(ctx, traceID)
	if err != nil || !ok {
		return err
	}
	byChunk := make(map[string]json.RawMessage, len(items))
	for _, it := range items {
		id, v := chunk(it)
		if byChunk[id], err = json.Marshal(v); err != nil {
			return err
		}
	}
	if err := put(ctx, traceID, byChunk); err != nil {
		return err
	}
	var meta map[string]any
	if len(md) > 0 {
		if err := json.Unmarshal(md, &meta); err != nil {
			return err
		}
	}
	return reassess(ctx, tx, traceID, meta)
}
