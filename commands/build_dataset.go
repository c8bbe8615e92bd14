package commands

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/rewardmodels"
)

// DatasetKey is where an attempt's dataset lives in the blob store.
func DatasetKey(ownerID, modelID string, attempt int) string {
	return fmt.Sprintf("datasets/%s/%s/attempt-%d.json", ownerID, modelID, attempt)
}

// BuildDataset builds the current attempt's dataset from the log as of the
// event that queued it (the request or the retry), stores it in the blob
// store and appends dataset_built — or fails the attempt, before any model
// is loaded, when it has too few pairs or the log cannot give its traces. A model that already has its
// dataset, or is no longer queued, is left alone (duplicate deliveries).
type BuildDataset struct {
	ModelID string
}

// BuildDatasetHandler runs BuildDataset.
type BuildDatasetHandler struct{ *Streams }

func (c BuildDatasetHandler) Handle(ctx context.Context, cmd BuildDataset) (Result, error) {
	return retryOnConflict(func() (Result, error) {
		st, err := c.loadModel(ctx, "", cmd.ModelID)
		if err != nil {
			return Result{}, err
		}
		if st.Status != rewardmodels.StatusQueued || st.Dataset != nil {
			return Result{}, nil
		}
		if st.NeedsExtraction() && !st.ExtractionDone() {
			return Result{}, nil // the extraction worker finishes first
		}
		asOf, err := c.QueuedAt(ctx, st)
		if err != nil {
			return Result{}, err
		}
		in, err := c.DatasetInputs(ctx, st, asOf)
		var ds rewardmodels.Dataset
		if err == nil {
			ds, err = rewardmodels.BuildDatasetFrom(in)
		}
		if few, ok := errors.AsType[*rewardmodels.TooFewPairsError](err); ok {
			p, derr := rewardmodels.DecideFail(st, st.Attempt, "", events.FailureTooFewPairs, few.Error())
			if derr != nil {
				return Result{}, derr
			}
			return c.appendToModel(ctx, Actor{}, st, events.RewardModelTrainingFailed, p)
		}
		if _, ok := errors.AsType[*events.UnreadableError](err); ok {
			// The log cannot give this dataset (an unreadable payload, a
			// missing or corrupt claim-check blob): redelivering would only
			// fail again, so the model fails with the reason and `retry`
			// rebuilds it once the cause is fixed. Other errors (the
			// database or blob store unreachable) are retried by the
			// projection.
			p, derr := rewardmodels.DecideFail(st, st.Attempt, "", events.FailureDataset,
				"the training dataset could not be built from the log: "+err.Error()+"; fix the cause, then retry the model")
			if derr != nil {
				return Result{}, derr
			}
			return c.appendToModel(ctx, Actor{}, st, events.RewardModelTrainingFailed, p)
		}
		if err != nil {
			return Result{}, err
		}
		raw, err := json.Marshal(ds)
		if err != nil {
			return Result{}, err
		}
		key := DatasetKey(st.OwnerID, st.ID, st.Attempt)
		if err := c.store.Blobs().Put(ctx, key, raw); err != nil {
			return Result{}, fmt.Errorf("store the dataset: %w", err)
		}
		sum := sha256.Sum256(raw)
		return c.appendToModel(ctx, Actor{}, st, events.RewardModelDatasetBuilt, events.RewardModelDatasetBuiltV1{
			ModelID: st.ID, Attempt: st.Attempt, DatasetKey: key, DatasetSHA256: hex.EncodeToString(sum[:]),
			NumPairs: len(ds.Pairs), SourceTraces: ds.SourceTraces, ScoreItems: len(ds.ScoreItems),
			ActionScoreItems: len(ds.ActionScoreItems), AsOfSeq: asOf, IncludedFindings: includedFindings(ds),
			EvaluationFindings: rewardmodels.EvaluationFindings(ds), Agreement: rewardmodels.TrainingAgreementOf(in)})
	})
}

// includedFindings lists the findings whose pairs are in a dataset that met
// the minimum size (RewardModelDetail.feedback[].included_in_training).
func includedFindings(ds rewardmodels.Dataset) []string {
	var ids []string
	for _, p := range ds.Pairs {
		ids = append(ids, p.FindingIDs...)
	}
	return ids
}
