package duck

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/criticml/critic/domain"
)

// StepLabelRow is one row of `step_labels`. Nil pointers and empty strings
// are SQL NULL (a user label has no agent fields and the reverse).
type StepLabelRow struct {
	TraceID, StepID      string
	StepIndex            int
	ChunkID, TaskID      string
	Actor                string
	Intent, Verdict      string
	VerdictTarget        *string
	Sentiment            string
	Type, Effect, Result string
	DuplicateOf          *string
	IsOutput             *bool
	Outcome, Stance      string
	Coverage             string
	Evidence, Note       string
	Score                *float64
	Credit               *int
	ExpectedCredit       *float64
}

// TaskScoreRow is one row of `task_scores`.
type TaskScoreRow struct {
	TraceID, TaskID               string
	FirstStepIndex, LastStepIndex *int
	AnswerStepIndex               *int
	AnswerPoints                  *float64
	Work, Score                   float64
	Capped                        bool
	TraceScore                    *float64
	TraceOutcome, Policy, Source  string
}

// ReplaceAssessment makes labels and tasks the trace's whole automatic
// annotation in the snapshot: it is derived from the trace's current steps,
// so every change of steps replaces it.
func (t *Tx) ReplaceAssessment(ctx context.Context, traceID string, labels []StepLabelRow, tasks []TaskScoreRow) error {
	if err := t.Exec(ctx, "DELETE FROM main.step_labels WHERE trace_id = ?", traceID); err != nil {
		return err
	}
	if err := t.Exec(ctx, "DELETE FROM main.task_scores WHERE trace_id = ?", traceID); err != nil {
		return err
	}
	return t.InsertAssessment(ctx, labels, tasks)
}

// InsertAssessment adds a trace's rows where it has none yet (a fresh
// import).
func (t *Tx) InsertAssessment(ctx context.Context, labels []StepLabelRow, tasks []TaskScoreRow) error {
	if len(labels) > 0 {
		if err := t.appendStepLabels(labels); err != nil {
			return err
		}
	}
	for _, r := range tasks {
		if err := t.Exec(ctx, `INSERT INTO main.task_scores VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			r.TraceID, r.TaskID, Deref(r.FirstStepIndex), Deref(r.LastStepIndex), Deref(r.AnswerStepIndex),
			Deref(r.AnswerPoints), r.Work, r.Score, r.Capped, Deref(r.TraceScore), r.TraceOutcome, r.Policy, r.Source); err != nil {
			return err
		}
	}
	return nil
}

// appendStepLabels bulk-inserts label rows through DuckDB's appender: a bulk
// import of labeled traces writes tens of thousands of them.
func (t *Tx) appendStepLabels(rows []StepLabelRow) error {
	return t.appendRows("step_labels", len(rows), func(i int, add func(...driver.Value) error) error {
		r := rows[i]
		var credit any
		if r.Credit != nil {
			credit = int32(*r.Credit)
		}
		if err := add(r.TraceID, r.StepID, int32(r.StepIndex), r.ChunkID, r.TaskID, r.Actor,
			NullString(r.Intent), NullString(r.Verdict), Deref(r.VerdictTarget), NullString(r.Sentiment),
			NullString(r.Type), NullString(r.Effect), NullString(r.Result), Deref(r.DuplicateOf), Deref(r.IsOutput),
			NullString(r.Outcome), NullString(r.Stance), NullString(r.Coverage), r.Evidence, r.Note,
			Deref(r.Score), credit, Deref(r.ExpectedCredit)); err != nil {
			return fmt.Errorf("duck: append step label %s: %w", r.ChunkID, err)
		}
		return nil
	})
}

// TraceSteps returns a trace's steps in order as stored (JSON columns as
// json.RawMessage), for projections that derive rows from the whole trace.
func (t *Tx) TraceSteps(ctx context.Context, traceID string) ([]StepRow, error) {
	var out []StepRow
	var s StepRow
	var toolName, toolCallID, in, md *string
	err := each(ctx, t.conn, []any{&s.ID, &s.Index, &s.Role, &s.Content, &toolName, &in, &toolCallID, &md}, func() error {
		r := StepRow{ID: s.ID, TraceID: traceID, Index: s.Index, Role: s.Role, Content: s.Content,
			ToolName: domain.OrEmpty(toolName), ToolCallID: domain.OrEmpty(toolCallID)}
		if in != nil {
			r.ToolInput = json.RawMessage(*in)
		}
		if md != nil {
			r.Metadata = json.RawMessage(*md)
		}
		out = append(out, r)
		return nil
	}, `SELECT id, step_index, role, content, tool_name, tool_input::VARCHAR, tool_call_id, metadata::VARCHAR
		FROM main.steps WHERE trace_id = ? ORDER BY step_index`, traceID)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// PutStoredLabels records model-made labels (JSON by chunk id) of a trace
// in the hidden table, replacing earlier labels of the same chunks.
func (t *Tx) PutStoredLabels(ctx context.Context, traceID string, labels map[string]json.RawMessage) error {
	return t.putByChunk(ctx, "_step_labels", traceID, labels)
}

// StoredLabels returns a trace's model-made labels by chunk id.
func (t *Tx) StoredLabels(ctx context.Context, traceID string) (map[string]json.RawMessage, error) {
	return t.byChunk(ctx, `SELECT chunk_id, label FROM main._step_labels WHERE trace_id = ?`, traceID)
}

// PutQualityChecks records a grading model's quality checks (JSON by chunk
// id) of a trace in the hidden table, replacing earlier checks of the same
// chunks.
func (t *Tx) PutQualityChecks(ctx context.Context, traceID string, checks map[string]json.RawMessage) error {
	return t.putByChunk(ctx, "_step_quality_checks", traceID, checks)
}

// QualityChecks returns a trace's quality checks by chunk id.
func (t *Tx) QualityChecks(ctx context.Context, traceID string) (map[string]json.RawMessage, error) {
	return t.byChunk(ctx, `SELECT chunk_id, "check" FROM main._step_quality_checks WHERE trace_id = ?`, traceID)
}

// putByChunk writes a trace's JSON rows by chunk id into one of the hidden
// tables (trace_id, chunk_id, JSON), replacing earlier rows of the same
// chunks: one statement per scoreChunk rows, as the scores are written.
func (t *Tx) putByChunk(ctx context.Context, table, traceID string, byChunk map[string]json.RawMessage) error {
	args := make([]any, 0, 3*min(len(byChunk), scoreChunk))
	flush := func() error {
		if len(args) == 0 {
			return nil
		}
		err := t.Exec(ctx, `INSERT OR REPLACE INTO main.`+table+` VALUES `+valueRows(len(args)/3, "(?, ?, ?)"), args...)
		args = args[:0]
		return err
	}
	for chunk, v := range byChunk {
		args = append(args, traceID, chunk, string(v))
		if len(args) == 3*scoreChunk {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// byChunk reads a (chunk id, JSON) query into a map by chunk id.
func (t *Tx) byChunk(ctx context.Context, query string, args ...any) (map[string]json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	var c, v string
	err := each(ctx, t.conn, []any{&c, &v}, func() error {
		out[c] = json.RawMessage(v)
		return nil
	}, query, args...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// TraceMetadata returns a trace's metadata (nil when the trace is not in
// the snapshot) and whether it exists.
func (t *Tx) TraceMetadata(ctx context.Context, traceID string) (json.RawMessage, bool, error) {
	var md *string
	err := t.conn.QueryRowContext(ctx, `SELECT metadata::VARCHAR FROM main.traces WHERE id = ?`, traceID).Scan(&md)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil || md == nil {
		return nil, err == nil, err
	}
	return json.RawMessage(*md), true, nil
}
