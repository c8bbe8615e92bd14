package commands

import (
	"context"
	"encoding/json"
)

// CompleteTraining records a succeeded attempt with its scores. A heartbeat
// of the same attempt racing with it makes it decide again (it used to
// answer 409 concurrent_write, which the worker took for a lost lease).
// It is a worker's success report. Scores come as the job's
// scores.jsonl and action_scores.jsonl in the blob store; they are checked
// against the dataset (exact trace and step ids, finite scores, credit in
// [-1, 1]) and published atomically with the success.
type CompleteTraining struct {
	WorkerID, ModelID          string
	Attempt                    int
	Metrics                    json.RawMessage
	RewardStats, ActionStats   json.RawMessage
	ScoresKey, ActionScoresKey string
}

// CompleteTrainingHandler runs CompleteTraining.
type CompleteTrainingHandler struct{ *Streams }

// Handle runs the command.
func (c CompleteTrainingHandler) Handle(ctx context.Context, cmd CompleteTraining) (Result, error) {
	return retryOnConflict(func() (Result, error) { return c.completeTraining(ctx, cmd) })
}
