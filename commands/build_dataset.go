package commands

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/criticml/critic/domain/criteria"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/domain/traces"
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
func (c *Commands) BuildDataset(ctx context.Context, modelID string) (Result, error) {
	return retryOnConflict(func() (Result, error) {
		st, err := c.loadModel(ctx, "", modelID)
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
		var few *rewardmodels.TooFewPairsError
		if errors.As(err, &few) {
			p, derr := rewardmodels.DecideFail(st, st.Attempt, "", events.FailureTooFewPairs, few.Error())
			if derr != nil {
				return Result{}, derr
			}
			return c.appendToModel(ctx, Actor{}, st, events.RewardModelTrainingFailed, p)
		}
		var unreadable *events.UnreadableError
		if errors.As(err, &unreadable) {
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

// QueuedAt is the log position of the event that queued the model's current
// attempt: what its dataset and extraction read the traces as of. A query
// on the command side because BuildDataset decides with it and `critic
// audit` must rebuild from the very same position (the read model does not
// keep event positions).
func (c *Commands) QueuedAt(ctx context.Context, st rewardmodels.State) (int64, error) {
	stream := events.RewardModelStream(st.ID)
	loaded, err := c.store.LoadStreams(ctx, []string{stream})
	if err != nil {
		return 0, err
	}
	var seq int64
	for _, e := range loaded[stream] {
		if e.Type == events.RewardModelRequested || e.Type == events.RewardModelRetried {
			seq = e.Seq
		}
	}
	return seq, nil
}

// DatasetInputs reads from the log as of asOf what a model's dataset is
// built from: the dataset and its agreement (rewardmodels.TrainingAgreementOf)
// are both pure functions of it. It stays on the command side, a query
// though it is, because BuildDataset builds from it and `critic audit`
// proves a stored dataset by rebuilding it with the same code: the read
// model holds traces as they are now, not as of a log position.
func (c *Commands) DatasetInputs(ctx context.Context, st rewardmodels.State, asOf int64) (rewardmodels.DatasetInputs, error) {
	selected, every, err := c.selection(ctx, st, asOf)
	if err != nil {
		return rewardmodels.DatasetInputs{}, err
	}
	in := rewardmodels.DatasetInputs{ModelID: st.ID, Attempt: st.Attempt, AsOfSeq: asOf, Selected: selected, All: every,
		MaxPairs: st.Requested.MaxPairs, Config: st.Config, Unavailable: st.Plan.Unavailable}
	if st.NeedsExtraction() {
		in.Extracted = st.Extracted
	}
	if id := st.Config.Criterion; id != "" {
		stream := events.CriteriaStream(st.OwnerID)
		loaded, err := c.store.LoadStreamsAsOf(ctx, []string{stream}, asOf)
		if err != nil {
			return rewardmodels.DatasetInputs{}, err
		}
		cs, err := criteria.Fold(loaded[stream])
		if err != nil {
			return rewardmodels.DatasetInputs{}, err
		}
		in.Criterion, _ = cs.Get(id)
	}
	return in, nil
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

// selection folds the model's selected traces and every trace of the owner
// as of asOf.
func (c *Commands) selection(ctx context.Context, st rewardmodels.State, asOf int64) (selected, every []traces.State, err error) {
	all, err := c.store.OwnerStreams(ctx, st.OwnerID, "trace/", asOf)
	if err != nil {
		return nil, nil, err
	}
	loaded, err := c.store.LoadStreamsAsOf(ctx, all, asOf)
	if err != nil {
		return nil, nil, err
	}
	for _, id := range st.Requested.TraceIDs {
		s, err := traces.Fold(id, loaded[events.TraceStream(id)])
		if err != nil {
			return nil, nil, err
		}
		if s.Exists {
			selected = append(selected, s)
		}
	}
	for _, stream := range all {
		s, err := traces.Fold("", loaded[stream])
		if err != nil {
			return nil, nil, err
		}
		if s.Exists {
			every = append(every, s)
		}
	}
	return selected, every, nil
}

// Selection returns a model's selected traces as of asOf (operator tools:
// `critic audit` shows the source message behind each finding). Like
// DatasetInputs it folds the log as of a position, which the read model
// cannot answer.
func (c *Commands) Selection(ctx context.Context, st rewardmodels.State, asOf int64) ([]traces.State, error) {
	selected, _, err := c.selection(ctx, st, asOf)
	return selected, err
}
