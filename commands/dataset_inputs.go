package commands

import (
	"context"

	"github.com/criticml/critic/domain/criteria"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/domain/traces"
)

// QueuedAt is the log position of the event that queued the model's current
// attempt: what its dataset and extraction read the traces as of. A query
// on the command side because BuildDataset decides with it and `critic
// audit` must rebuild from the very same position (the read model does not
// keep event positions).
func (c *Streams) QueuedAt(ctx context.Context, st rewardmodels.State) (int64, error) {
	evs, err := c.loadStream(ctx, events.RewardModelStream(st.ID))
	if err != nil {
		return 0, err
	}
	var seq int64
	for _, e := range evs {
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
func (c *Streams) DatasetInputs(ctx context.Context, st rewardmodels.State, asOf int64) (rewardmodels.DatasetInputs, error) {
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

// selection folds the model's selected traces and every trace of the owner
// as of asOf.
func (c *Streams) selection(ctx context.Context, st rewardmodels.State, asOf int64) (selected, every []traces.State, err error) {
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
func (c *Streams) Selection(ctx context.Context, st rewardmodels.State, asOf int64) ([]traces.State, error) {
	selected, _, err := c.selection(ctx, st, asOf)
	return selected, err
}
