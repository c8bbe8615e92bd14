package commands

import (
	"context"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/rewardmodels"
)

// RequestScoringResult names the run that answers the request: a new one, the
// active one (concurrent requests reuse it), or the completed one for the
// same trace revision and checkpoint.
type RequestScoringResult struct {
	Result
	RunID string
}

// RequestScoring is POST /traces/{id}/score.
type RequestScoring struct {
	Actor   Actor
	TraceID string
	ModelID string
}

// RequestScoringHandler runs RequestScoring.
type RequestScoringHandler struct{ *Streams }

func (c RequestScoringHandler) Handle(ctx context.Context, cmd RequestScoring) (RequestScoringResult, error) {
	m, err := c.loadModel(ctx, cmd.Actor.UserID, cmd.ModelID)
	if err != nil {
		return RequestScoringResult{}, err
	}
	var res RequestScoringResult
	r, err := retryOnConflict(func() (Result, error) {
		tr, err := c.ownedTrace(ctx, cmd.Actor, cmd.TraceID)
		if err != nil {
			return Result{}, err
		}
		if err := rewardmodels.CheckScorable(m); err != nil {
			return Result{}, err
		}
		stream := events.ScoringStream(cmd.TraceID, cmd.ModelID)
		evs, err := c.loadStream(ctx, stream)
		if err != nil {
			return Result{}, err
		}
		sc, err := events.Fold[rewardmodels.ScoringState](evs)
		if err != nil {
			return Result{}, err
		}
		if rewardmodels.DecideScoring(sc, tr.Revision, false) == rewardmodels.ReuseRun {
			res.RunID = sc.RunID
			return Result{}, nil
		}
		ev, err := c.scoringRunRequest(ctx, tr, m, false, "")
		if err != nil {
			return Result{}, err
		}
		res.RunID = ev.Payload.(events.ScoringRunRequestedV1).RunID
		return c.append(ctx, cmd.Actor, map[string]int64{stream: sc.Version}, []events.New{ev})
	})
	res.Result = r
	return res, err
}
