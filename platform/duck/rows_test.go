package duck

import (
	"context"
	"database/sql/driver"
	"fmt"
	"time"

	duckdb "github.com/duckdb/duckdb-go/v2"
)

// Rows the projection writes through its own SQL, written directly by the
// tests of this package.

// UpsertTrace inserts or replaces the trace row with r.ID.
func (t *Tx) UpsertTrace(ctx context.Context, r TraceRow) error {
	meta, err := jsonText(r.Metadata)
	if err != nil {
		return fmt.Errorf("duck: trace %s metadata: %w", r.ID, err)
	}
	if err := t.Exec(ctx, "DELETE FROM main.traces WHERE id = ?", r.ID); err != nil {
		return err
	}
	return t.Exec(ctx, `INSERT INTO main.traces VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, NullString(r.ExternalID), NullString(r.Title), NullString(r.SourceFormat), NullString(r.SourceID),
		r.StepCount, meta, nullTime(r.CreatedAt), nullTime(r.UpdatedAt), r.Contribute)
}

// InsertScore records a trace reward. Scores are a history (one row per
// scoring), so this appends; DeleteScores clears a trace's history.
func (t *Tx) InsertScore(ctx context.Context, r ScoreRow) error {
	return t.Exec(ctx, `INSERT INTO main.scores VALUES (?, ?, ?, ?, ?)`,
		r.TraceID, r.RewardModelID, NullString(r.RewardModelName), r.Score, nullTime(r.CreatedAt))
}

// InsertActionScores bulk-appends action scores (one scoring run).
func (t *Tx) InsertActionScores(ctx context.Context, rows []ActionScoreRow) error {
	if len(rows) == 0 {
		return nil
	}
	return t.conn.Raw(func(dc any) error {
		a, err := duckdb.NewAppenderFromConn(dc.(driver.Conn), "main", "action_scores")
		if err != nil {
			return fmt.Errorf("duck: action_scores appender: %w", err)
		}
		for _, r := range rows {
			if err := a.AppendRow(r.TraceID, r.StepID, int32(r.StepIndex), r.RewardModelID,
				NullString(r.RewardModelName), r.Score, r.Credit, nullTime(r.CreatedAt)); err != nil {
				_ = a.Close()
				return fmt.Errorf("duck: append action score: %w", err)
			}
		}
		return a.Close()
	})
}

// ScoreRow is one row of `scores`: a raw trace reward from one model.
type ScoreRow struct {
	TraceID, RewardModelID, RewardModelName string
	Score                                   float64
	CreatedAt                               time.Time
}

// ActionScoreRow is one row of `action_scores`.
type ActionScoreRow struct {
	TraceID, StepID                string
	StepIndex                      int
	RewardModelID, RewardModelName string
	Score, Credit                  float64
	CreatedAt                      time.Time
}
