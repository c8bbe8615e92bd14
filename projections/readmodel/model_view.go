package readmodel

import (
	"encoding/json"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/rewardmodels"
)

// ModelAsOf folds a reward model's stream, oldest first, through the event
// with id throughEventID (all of it when that id is not in the stream) into
// the RewardModel the read model shows after applying exactly those events.
// It is the same transition table as the projection's rm_reward_models
// updates (apply_models.go), in memory: a write's response is then a state
// the model really had, whether the read model lags behind the write or has
// already moved past it. ok is false for a stream without its request.
func ModelAsOf(evs []events.Envelope, throughEventID string) (m RewardModel, ok bool) {
	m.Metrics, m.Progress = json.RawMessage("null"), json.RawMessage("null")
	for _, e := range evs {
		switch e.Type {
		case events.RewardModelRequested:
			var p events.RewardModelRequestedV1
			if e.Decode(&p) != nil {
				return m, false
			}
			m = RewardModel{ID: p.ModelID, Name: p.Name, BaseModel: p.BaseModel, Compute: p.Compute, Epochs: p.Epochs,
				MaxPairs: p.MaxPairs, TraceCount: len(p.TraceIDs), Status: rewardmodels.StatusQueued,
				Metrics: json.RawMessage("null"), Progress: json.RawMessage("null"), CreatedAt: e.RecordedAt.UTC(),
				TrainingConfig: trainingConfigView(rewardmodels.ConfigOf(p))}
			ok = true
		case events.RewardModelDatasetBuilt:
			var p events.RewardModelDatasetBuiltV1
			if e.Decode(&p) == nil {
				n := p.NumPairs
				m.NumPairs = &n
			}
		case events.RewardModelTrainingStarted:
			var p events.RewardModelTrainingStartedV1
			if e.Decode(&p) == nil {
				t, w := e.RecordedAt.UTC(), p.WorkerID
				m.Status, m.StartedAt, m.Progress, m.WorkerID = rewardmodels.StatusRunning, &t, json.RawMessage("null"), &w
				if p.Compute != "" {
					m.Compute = p.Compute
				}
			}
		case events.RewardModelTrainingRequeued:
			m.Status, m.StartedAt, m.Progress, m.WorkerID = rewardmodels.StatusQueued, nil, json.RawMessage("null"), nil
		case events.RewardModelHeartbeat:
			var p events.RewardModelHeartbeatV1
			if e.Decode(&p) == nil {
				if b, err := json.Marshal(p.Progress); err == nil {
					m.Progress = b
				}
			}
		case events.RewardModelTrainingSucceeded:
			var p events.RewardModelTrainingSucceededV1
			if e.Decode(&p) == nil {
				t, n := e.RecordedAt.UTC(), p.NumPairs
				m.Status, m.NumPairs, m.FinishedAt, m.Progress = rewardmodels.StatusSucceeded, &n, &t, json.RawMessage("null")
				m.Metrics = rawOrNull(p.Metrics)
				m.RewardStats, m.ActionRewardStats = rewardmodels.ParseRewardStats(p.RewardStats), rewardmodels.ParseRewardStats(p.ActionRewardStats)
			}
		case events.RewardModelTrainingFailed:
			var p events.RewardModelTrainingFailedV1
			if e.Decode(&p) == nil {
				t, msg := e.RecordedAt.UTC(), p.Error
				m.Status, m.Error, m.FinishedAt = rewardmodels.StatusFailed, &msg, &t
			}
		case events.RewardModelRetried:
			m.Status, m.Error, m.NumPairs, m.StartedAt, m.FinishedAt, m.WorkerID = rewardmodels.StatusQueued, nil, nil, nil, nil, nil
			m.RewardStats, m.ActionRewardStats = nil, nil
			m.Metrics, m.Progress = json.RawMessage("null"), json.RawMessage("null")
		}
		if e.ID == throughEventID {
			break
		}
	}
	return m, ok
}
