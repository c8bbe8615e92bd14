package workerapi

import (
	"context"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain/jobs"
)

// training is KindTrain: the claim starts the attempt under a lease, beats
// carry the progress, the result appends training_succeeded with the
// scores the worker wrote (the model's domain decision).
func (a *API) training() actions {
	type c[B any] = call[jobs.TrainJob, B]
	return actions{
		jobs.Claim: on(func(ctx context.Context, r c[struct{}]) (any, error) {
			j, err := a.cmds.ClaimTraining(ctx, r.Worker, r.ID, r.Job.Attempt, a.lease)
			if err != nil {
				return nil, err
			}
			j.CorrelationID = "" // the message that named the attempt carries it
			return trainingClaim(j), nil
		}),
		jobs.Beat: on(func(ctx context.Context, r c[jobs.Progress]) (any, error) {
			return ack(a.cmds.Heartbeat(ctx, r.Worker, r.ID, r.Job.Attempt, r.Body))
		}),
		jobs.Finish: on(func(ctx context.Context, r c[jobs.Succeeded]) (any, error) {
			s := r.Body
			if string(s.ActionRewardStats) == "null" {
				s.ActionRewardStats = nil
			}
			return ack(a.cmds.CompleteTraining(ctx, commands.CompleteTraining{WorkerID: r.Worker, ModelID: r.ID, Attempt: r.Job.Attempt,
				Metrics: s.Metrics, RewardStats: s.RewardStats, ActionStats: s.ActionRewardStats, ScoresKey: s.ScoresKey, ActionScoresKey: s.ActionScoresKey}))
		}),
		jobs.Fail: on(func(ctx context.Context, r c[struct{}]) (any, error) {
			return ack(a.cmds.FailTraining(ctx, r.Worker, r.ID, r.Job.Attempt, r.Error))
		}),
		jobs.HandBack: on(func(ctx context.Context, r c[struct{}]) (any, error) {
			return ack(a.cmds.HandBackTraining(ctx, r.Worker, r.ID, r.Job.Attempt, r.Reason))
		}),
	}
}

func trainingClaim(j commands.ClaimedJob) jobs.TrainingClaim {
	return jobs.TrainingClaim{ModelID: j.ModelID, OwnerID: j.OwnerID, Name: j.Name, BaseModel: j.BaseModel, DatasetKey: j.DatasetKey,
		ArtifactKey: j.ArtifactKey, Attempt: j.Attempt, Epochs: j.Epochs, LeaseSeconds: j.LeaseSeconds, CorrelationID: j.CorrelationID}
}
