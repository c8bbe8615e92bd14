package readmodel

import (
	"encoding/json"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/rewardmodels"
)

// ModelAsOf folds a reward model's stream, oldest first, through the event
// with id throughEventID (all of it when that id is not in the stream) into
// the RewardModel the read model shows after applying exactly those events:
// a write's response is then a state the model really had, whether the read
// model lags behind the write or has already moved past it. The fold is the
// command side's (rewardmodels.State.Apply), so the two cannot disagree;
// TestModelAsOfMatchesTheReadModel holds the projection's table to it. ok is
// false for a stream without its request.
func ModelAsOf(evs []events.Envelope, throughEventID string) (m RewardModel, ok bool) {
	var st rewardmodels.State
	for _, e := range evs {
		if err := st.Apply(e); err != nil {
			return m, false
		}
		if e.ID == throughEventID {
			break
		}
	}
	if st.ID == "" {
		return m, false
	}
	return modelView(st), true
}

// modelView is a model's state as GET /reward-models shows it.
func modelView(st rewardmodels.State) RewardModel {
	p := st.Requested
	m := RewardModel{ID: st.ID, Name: p.Name, BaseModel: p.BaseModel, Compute: st.Compute, Epochs: p.Epochs, MaxPairs: p.MaxPairs,
		TraceCount: len(p.TraceIDs), Status: st.Status, NumPairs: st.NumPairs, Metrics: json.RawMessage("null"),
		Progress: json.RawMessage("null"), CreatedAt: st.CreatedAt, StartedAt: st.StartedAt, FinishedAt: st.FinishedAt,
		TrainingConfig: trainingConfigView(st.Config)}
	if st.WorkerID != "" {
		m.WorkerID = new(st.WorkerID)
	}
	if st.Progress != nil {
		m.Progress = st.Progress
	}
	switch st.Status {
	case rewardmodels.StatusFailed:
		m.Error = new(st.Error)
	case rewardmodels.StatusSucceeded:
		if s := st.Success; s != nil {
			m.Metrics = rawOrNull(s.Metrics)
			m.RewardStats, m.ActionRewardStats = rewardmodels.ParseRewardStats(s.RewardStats), rewardmodels.ParseRewardStats(s.ActionRewardStats)
		}
	}
	return m
}
