package commands

import (
	"context"
	"errors"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/rewardmodels"
)

// MaxBatchTraces is how many traces one background batch scores (spec 001
// "Learned action credit": up to eight traces, one loaded checkpoint).
const MaxBatchTraces = 8

// BackgroundBatch is what RequestBackgroundBatch appended: the batch (""
// when no trace was eligible any more) and its traces, and the traces
// left out because they have nothing to score.
type BackgroundBatch struct {
	Result
	BatchID   string
	TraceIDs  []string
	NoActions []string
}

// RequestBackgroundBatch requests background scoring of up to
// MaxBatchTraces of the model owner's traces, which the scheduler's read
// model nominated: each trace's scoring stream decides whether its current
// revision is still eligible (rewardmodels.DecideScoring, automatic), and
// the eligible ones' runs and the batch are one append at the streams'
// versions, so two schedulers racing lose cleanly. A model that is not
// ready, is paused, or cannot score actions requests nothing.
func (c *Commands) RequestBackgroundBatch(ctx context.Context, modelID string, traceIDs []string) (BackgroundBatch, error) {
	if len(traceIDs) > MaxBatchTraces {
		traceIDs = traceIDs[:MaxBatchTraces]
	}
	var out BackgroundBatch
	r, err := retryOnConflict(func() (Result, error) {
		out = BackgroundBatch{}
		m, err := c.loadModel(ctx, "", modelID)
		if err != nil {
			return Result{}, err
		}
		if m.ScoringPaused || rewardmodels.CheckScorable(m) != nil {
			return Result{}, nil
		}
		owned, err := c.ownedTraces(ctx, Actor{UserID: m.OwnerID}, traceIDs)
		if err != nil {
			return Result{}, err
		}
		streams := make([]string, len(traceIDs))
		for i, id := range traceIDs {
			streams[i] = events.ScoringStream(id, modelID)
		}
		loaded, err := c.store.LoadStreams(ctx, streams)
		if err != nil {
			return Result{}, err
		}
		batchID := newID()
		expected := map[string]int64{events.ScoringBatchStream(batchID): 0}
		seen := map[string]bool{}
		batch := events.ScoringBatchRequestedV1{BatchID: batchID, ModelID: modelID}
		var evs []events.New
		for i, id := range traceIDs {
			tr, ok := owned[id]
			if !ok || seen[id] {
				continue // deleted, not the owner's, or named twice
			}
			seen[id] = true
			var sc rewardmodels.ScoringState
			for _, e := range loaded[streams[i]] {
				if err := sc.Apply(e); err != nil {
					return Result{}, err
				}
			}
			if rewardmodels.DecideScoring(sc, tr.Revision, true) != rewardmodels.NewRun {
				continue
			}
			ev, err := c.scoringRunRequest(ctx, tr, m, true, batchID)
			var invalid *domain.ValidationError
			if errors.As(err, &invalid) {
				out.NoActions = append(out.NoActions, id)
				continue
			}
			if err != nil {
				return Result{}, err
			}
			expected[streams[i]] = sc.Version
			evs = append(evs, ev)
			batch.Runs = append(batch.Runs, events.ScoringBatchRun{TraceID: id, RunID: ev.Payload.(events.ScoringRunRequestedV1).RunID})
			out.TraceIDs = append(out.TraceIDs, id)
		}
		if len(evs) == 0 {
			return Result{}, nil
		}
		out.BatchID = batchID
		evs = append([]events.New{{ID: newID(), Stream: events.ScoringBatchStream(batchID), OwnerID: m.OwnerID,
			Type: events.ScoringBatchRequested, Payload: batch}}, evs...)
		return c.append(ctx, Actor{}, expected, evs)
	})
	if err != nil {
		return BackgroundBatch{}, err
	}
	out.Result = r
	return out, nil
}

// SetBackgroundScoring pauses or resumes the caller's ready model's
// background scoring (PUT /reward-models/{id}/background-scoring): 404 for
// a model that is not the caller's, 409 model_not_ready before it succeeded.
func (c *Commands) SetBackgroundScoring(ctx context.Context, actor Actor, modelID string, paused bool) (Result, error) {
	if _, err := c.loadModel(ctx, actor.UserID, modelID); err != nil {
		return Result{}, err
	}
	return c.onModel(ctx, modelID, actor, func(m rewardmodels.State) (string, any, error) {
		return rewardmodels.DecidePauseScoring(m, paused)
	})
}
