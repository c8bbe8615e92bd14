package commands

import (
	"context"
	"errors"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/rewardmodels"
)

// RequestBackgroundBatch requests background scoring of up to
// MaxBatchTraces of the model owner's traces, which the scheduler's read
// model nominated: each trace's scoring stream decides whether its current
// revision is still eligible (rewardmodels.DecideScoring, automatic), and
// the eligible ones' runs and the batch are one append at the streams'
// versions, so two schedulers racing lose cleanly. A model that is not
// ready, is paused, or cannot score actions requests nothing.
type RequestBackgroundBatch struct {
	ModelID  string
	TraceIDs []string
}

// RequestBackgroundBatchHandler runs RequestBackgroundBatch.
type RequestBackgroundBatchHandler struct{ *Streams }

func (c RequestBackgroundBatchHandler) Handle(ctx context.Context, cmd RequestBackgroundBatch) (BackgroundBatch, error) {
	if len(cmd.TraceIDs) > MaxBatchTraces {
		cmd.TraceIDs = cmd.TraceIDs[:MaxBatchTraces]
	}
	var out BackgroundBatch
	r, err := retryOnConflict(func() (Result, error) {
		out = BackgroundBatch{}
		m, err := c.loadModel(ctx, "", cmd.ModelID)
		if err != nil {
			return Result{}, err
		}
		if m.ScoringPaused || rewardmodels.CheckScorable(m) != nil {
			return Result{}, nil
		}
		owned, err := c.ownedTraces(ctx, Actor{UserID: m.OwnerID}, cmd.TraceIDs)
		if err != nil {
			return Result{}, err
		}
		streams := make([]string, len(cmd.TraceIDs))
		for i, id := range cmd.TraceIDs {
			streams[i] = events.ScoringStream(id, cmd.ModelID)
		}
		loaded, err := c.store.LoadStreams(ctx, streams)
		if err != nil {
			return Result{}, err
		}
		batchID := newID()
		expected := map[string]int64{events.ScoringBatchStream(batchID): 0}
		seen := map[string]bool{}
		batch := events.ScoringBatchRequestedV1{BatchID: batchID, ModelID: cmd.ModelID}
		var evs []events.New
		for i, id := range cmd.TraceIDs {
			tr, ok := owned[id]
			if !ok || seen[id] {
				continue // deleted, not the owner's, or named twice
			}
			seen[id] = true
			sc, err := events.Fold[rewardmodels.ScoringState](loaded[streams[i]])
			if err != nil {
				return Result{}, err
			}
			if rewardmodels.DecideScoring(sc, tr.Revision, true) != rewardmodels.NewRun {
				continue
			}
			ev, err := c.scoringRunRequest(ctx, tr, m, true, batchID)
			if _, ok := errors.AsType[*domain.ValidationError](err); ok {
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
