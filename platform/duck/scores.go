package duck

import (
	"context"
	"slices"
	"strings"
	"time"
)

// Scores land set-wise: a report of one trace's action scores is one
// DELETE and one INSERT per chunk, not two statements a step — each
// statement scans its table, and background scoring reports trace by
// trace into accounts of thousands of scored steps (BenchmarkScoreReports).

// scoreChunk bounds the rows of one statement (four parameters a row).
const scoreChunk = 250

// StepScore is one action's score from one scoring.
type StepScore struct {
	TraceID, StepID string
	Score, Credit   float64
}

// TraceScore is one trace's score from one scoring.
type TraceScore struct {
	TraceID string
	Score   float64
}

// CurrentRevisions returns the revision the snapshot holds of each of ids
// (ids it does not hold are absent).
func (t *Tx) CurrentRevisions(ctx context.Context, ids []string) (map[string]int, error) {
	out := map[string]int{}
	var id string
	var rev int
	add := func() error {
		out[id] = rev
		return nil
	}
	for chunk := range slices.Chunk(ids, idChunk) {
		if err := each(ctx, t.conn, []any{&id, &rev}, add,
			"SELECT trace_id, revision FROM main._trace_revisions WHERE trace_id IN ("+placeholders(len(chunk))+")", anySlice(chunk)...); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ReplaceActionScores makes scores model's latest scores of their steps,
// at the steps' current positions; a step the snapshot does not hold is
// skipped. The caller keeps one score a step.
func (t *Tx) ReplaceActionScores(ctx context.Context, modelID, modelName string, at time.Time, scores []StepScore) error {
	for chunk := range slices.Chunk(scores, scoreChunk) {
		if err := deleteModelScores(ctx, t, "action_scores", "step_id", modelID, chunk, func(s StepScore) string { return s.StepID }); err != nil {
			return err
		}
		if err := t.insertStepScores(ctx, "action_scores", modelID, modelName, at, chunk); err != nil {
			return err
		}
	}
	return nil
}

// ReplaceTraceScores makes scores model's latest scores of their traces.
// The caller keeps one score a trace.
func (t *Tx) ReplaceTraceScores(ctx context.Context, modelID, modelName string, at time.Time, scores []TraceScore) error {
	for chunk := range slices.Chunk(scores, scoreChunk) {
		if err := deleteModelScores(ctx, t, "scores", "trace_id", modelID, chunk, func(s TraceScore) string { return s.TraceID }); err != nil {
			return err
		}
		var args []any
		for _, s := range chunk {
			args = append(args, s.TraceID, modelID, modelName, s.Score, at)
		}
		if err := t.Exec(ctx, "INSERT INTO main.scores VALUES "+valueRows(len(chunk), "(?, ?, ?, ?, ?)"), args...); err != nil {
			return err
		}
	}
	return nil
}

// deleteModelScores deletes model's rows of table whose key column holds
// the key of one of the chunk's scores.
func deleteModelScores[S any](ctx context.Context, t *Tx, table, column, modelID string, chunk []S, key func(S) string) error {
	args := make([]any, 0, len(chunk)+1)
	args = append(args, modelID)
	for _, s := range chunk {
		args = append(args, key(s))
	}
	return t.Exec(ctx, "DELETE FROM main."+table+" WHERE reward_model_id = ? AND "+column+" IN ("+placeholders(len(chunk))+")", args...)
}

// InsertEvaluatorScores adds a release's scores of one trace revision's
// steps (the caller cleared the trace's earlier ones).
func (t *Tx) InsertEvaluatorScores(ctx context.Context, release, revision int, at time.Time, scores []StepScore) error {
	for chunk := range slices.Chunk(scores, scoreChunk) {
		if err := t.insertStepScores(ctx, "evaluator_scores", release, revision, at, chunk); err != nil {
			return err
		}
	}
	return nil
}

// insertStepScores inserts a row into table (action_scores,
// evaluator_scores) for each score whose step the snapshot holds: the
// step's trace, id and position, the scoring's two columns (a model's id
// and name, a release and revision), score, credit and at.
func (t *Tx) insertStepScores(ctx context.Context, table string, col1, col2 any, at time.Time, chunk []StepScore) error {
	args := []any{col1, col2, at}
	for _, s := range chunk {
		args = append(args, s.TraceID, s.StepID, s.Score, s.Credit)
	}
	return t.Exec(ctx, `INSERT INTO main.`+table+`
		SELECT s.trace_id, s.id, s.step_index, ?, ?, v.score, v.credit, ?
		FROM main.steps s JOIN (VALUES `+valueRows(len(chunk), "(?::VARCHAR, ?::VARCHAR, ?::DOUBLE, ?::DOUBLE)")+`) v(trace_id, step_id, score, credit)
		ON s.id = v.step_id AND s.trace_id = v.trace_id`, args...)
}

// valueRows is n copies of row, comma-separated.
func valueRows(n int, row string) string { return strings.TrimSuffix(strings.Repeat(row+",", n), ",") }
