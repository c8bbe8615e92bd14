package commands

import (
	"context"
	"math"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/rewardmodels"
)

// FinishScoring records a run's outcome. Scores for a trace whose revision
// changed since the request fail the run instead (the trace was re-imported
// or grew while it was scored).
//
// traceScore, when the worker sent one, is the whole trace's raw reward:
// it publishes as the model's trace score in the same append.
type FinishScoring struct {
	WorkerID   string
	TraceID    string
	ModelID    string
	RunID      string
	Scores     []events.ActionScore
	TraceScore *float64
	Failure    string
}

// FinishScoringHandler runs FinishScoring.
type FinishScoringHandler struct{ *Streams }

// Handle runs the command.
func (c FinishScoringHandler) Handle(ctx context.Context, cmd FinishScoring) (Result, error) {
	sc, req, owner, err := c.loadScoring(ctx, cmd.TraceID, cmd.ModelID)
	if err != nil {
		return Result{}, err
	}
	if sc.RunID != cmd.RunID || sc.Status != rewardmodels.RunRunning || sc.WorkerID != cmd.WorkerID {
		return Result{}, &domain.ConflictError{Code: "not_claimable", Message: "worker " + cmd.WorkerID + " does not hold scoring run " + cmd.RunID}
	}
	stream := events.ScoringStream(cmd.TraceID, cmd.ModelID)
	fail := func(msg string) (Result, error) {
		return c.append(ctx, workerActor(cmd.WorkerID), map[string]int64{stream: sc.Version}, []events.New{{ID: newID(), Stream: stream, OwnerID: owner,
			Type: events.ScoringRunFailed, Payload: events.ScoringRunFailedV1{RunID: cmd.RunID, TraceID: cmd.TraceID, ModelID: cmd.ModelID, Error: msg, Automatic: sc.Automatic}}})
	}
	if cmd.Failure != "" {
		return fail(cmd.Failure)
	}
	tr, err := c.ownedTrace(ctx, Actor{UserID: owner}, cmd.TraceID)
	if err != nil || tr.Revision != req.TraceRevision {
		return fail("the trace changed while it was being scored (it was re-imported, grew, or was deleted); request scoring again")
	}
	m, err := c.loadModelRequest(ctx, owner, cmd.ModelID)
	if err != nil {
		return Result{}, err
	}
	valid := map[string]bool{}
	for _, it := range scoringItems(tr, m).ActionScoreItems {
		valid[it.StepID] = true
	}
	for i := range cmd.Scores {
		if !valid[cmd.Scores[i].StepID] || cmd.Scores[i].TraceID != cmd.TraceID || !(cmd.Scores[i].Credit >= -1 && cmd.Scores[i].Credit <= 1) {
			return Result{}, domain.Invalid("action score %d: step %s is not an action of trace %s or its credit is out of range", i, cmd.Scores[i].StepID, cmd.TraceID)
		}
		cmd.Scores[i].Revision = tr.Revision
	}
	evs := []events.New{
		{ID: newID(), Stream: stream, OwnerID: owner, Type: events.ScoringRunSucceeded, Payload: events.ScoringRunSucceededV1{RunID: cmd.RunID, TraceID: cmd.TraceID, ModelID: cmd.ModelID, Automatic: sc.Automatic}},
		{ID: newID(), Stream: events.ScoresStream(cmd.ModelID), OwnerID: owner, Type: events.ActionsScored,
			Payload: events.ActionsScoredV1{ModelID: cmd.ModelID, ModelName: m.Requested.Name, RunID: cmd.RunID, Scores: cmd.Scores}},
	}
	if cmd.TraceScore != nil {
		if math.IsNaN(*cmd.TraceScore) || math.IsInf(*cmd.TraceScore, 0) {
			return Result{}, &domain.ValidationError{Code: "invalid_request", Field: "trace_score", Message: "the trace score must be a finite number"}
		}
		evs = append(evs, events.New{ID: newID(), Stream: events.ScoresStream(cmd.ModelID), OwnerID: owner, Type: events.TracesScored,
			Payload: events.TracesScoredV1{ModelID: cmd.ModelID, ModelName: m.Requested.Name,
				Scores: []events.TraceScore{{TraceID: cmd.TraceID, Revision: tr.Revision, Score: *cmd.TraceScore}}}})
	}
	return c.append(ctx, workerActor(cmd.WorkerID), map[string]int64{stream: sc.Version}, evs)
}
