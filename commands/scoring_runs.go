package commands

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/domain/traces"
)

// scoringRunRequest stores a new run's items (the trace's actions and the
// whole trace, rendered as training renders them) and returns the event
// that requests it; a trace without a scorable action is a validation
// error.
func (c *Streams) scoringRunRequest(ctx context.Context, tr traces.State, m rewardmodels.State, automatic bool, batchID string) (events.New, error) {
	items := scoringItems(tr, m)
	if len(items.ActionScoreItems) == 0 {
		return events.New{}, &domain.ValidationError{Code: "no_actions", Field: "trace_id", Message: "the trace has no assistant responses or tool calls to score"}
	}
	runID := newID()
	items.RunID = runID
	raw, _ := json.Marshal(items)
	key := fmt.Sprintf("scoring/%s/%s.json", m.OwnerID, runID)
	if err := c.store.Blobs().Put(ctx, key, raw); err != nil {
		return events.New{}, err
	}
	return events.New{ID: newID(), Stream: events.ScoringStream(tr.ID, m.ID), OwnerID: m.OwnerID,
		Type: events.ScoringRunRequested, Payload: events.ScoringRunRequestedV1{RunID: runID, TraceID: tr.ID, ModelID: m.ID,
			TraceRevision: tr.Revision, ItemsKey: key, Automatic: automatic, BatchID: batchID}}, nil
}

func scoringItems(tr traces.State, m rewardmodels.State) jobs.ScoringItems {
	pt := rewardmodels.PairTrace(tr)
	// Training and scoring render alike. Thinking steps are never scored,
	// whatever rules the model's dataset was built under: a score on
	// reasoning would show as an action's credit and queue it for review.
	v := m.Config.InputVersion
	items := jobs.ScoringItems{ModelID: m.ID, ArtifactKey: m.Success.ArtifactKey,
		Trace: rewardmodels.ScoreItem{TraceID: tr.ID, Revision: tr.Revision, Text: domain.RenderVersion(v, pt.Steps, len(pt.Steps)-1, true)}}
	if v == 3 {
		items.MaxLength = rewardmodels.InputV3MaxLength
	}
	for i, st := range pt.Steps {
		if rewardmodels.IsScorableAction(st) {
			items.ActionScoreItems = append(items.ActionScoreItems, rewardmodels.ActionItem{TraceID: tr.ID, StepID: st.ID, Revision: tr.Revision, Text: domain.RenderVersion(v, pt.Steps, i, false)})
		}
	}
	return items
}

func (c *Streams) loadScoring(ctx context.Context, traceID, modelID string) (rewardmodels.ScoringState, events.ScoringRunRequestedV1, string, error) {
	stream := events.ScoringStream(traceID, modelID)
	loaded, err := c.store.LoadStreams(ctx, []string{stream})
	if err != nil {
		return rewardmodels.ScoringState{}, events.ScoringRunRequestedV1{}, "", err
	}
	return foldScoring(loaded[stream])
}

// foldScoring folds one (trace, model) scoring stream: its state, the
// current run's request and the stream's owner.
func foldScoring(stream []events.Envelope) (rewardmodels.ScoringState, events.ScoringRunRequestedV1, string, error) {
	var sc rewardmodels.ScoringState
	var req events.ScoringRunRequestedV1
	owner := ""
	for _, e := range stream {
		if err := sc.Apply(e); err != nil {
			return rewardmodels.ScoringState{}, events.ScoringRunRequestedV1{}, "", err
		}
		owner = e.OwnerID
		if e.Type == events.ScoringRunRequested {
			if err := e.DecodeOrFail(&req); err != nil {
				return rewardmodels.ScoringState{}, events.ScoringRunRequestedV1{}, "", err
			}
		}
	}
	return sc, req, owner, nil
}

var _ = onKind(jobs.KindScore, (*Streams).scoringJob)

// scoringJob is KindScore: a scoring run of one (trace, model); its result
// appends the action scores. Runs send no heartbeat: the sweep times them.
func (c *Streams) scoringJob() jobActions {
	type call[B any] = jobCall[jobs.ScoreJob, B]
	return jobActions{
		jobs.Claim: onJob(func(ctx context.Context, r call[struct{}]) (any, error) {
			key, err := ClaimScoringHandler{c}.Handle(ctx, ClaimScoring{WorkerID: r.Worker, TraceID: r.Job.TraceID, ModelID: r.Job.ModelID, RunID: r.ID})
			return jobs.ScoringClaim{ItemsKey: key}, err
		}),
		jobs.Finish: onJob(func(ctx context.Context, r call[jobs.ScoringFinished]) (any, error) {
			scores := make([]events.ActionScore, len(r.Body.ActionScores))
			for i, s := range r.Body.ActionScores {
				scores[i] = events.ActionScore{TraceID: s.TraceID, StepID: s.StepID, Score: s.Score, Credit: s.Credit}
			}
			return jobAck(FinishScoringHandler{c}.Handle(ctx, FinishScoring{WorkerID: r.Worker, TraceID: r.Job.TraceID, ModelID: r.Job.ModelID, RunID: r.ID, Scores: scores, TraceScore: r.Body.TraceScore}))
		}),
		jobs.Fail: onJob(func(ctx context.Context, r call[struct{}]) (any, error) {
			msg := r.Error
			if msg == "" {
				msg = "the worker reported a failure without a log"
			}
			return jobAck(FinishScoringHandler{c}.Handle(ctx, FinishScoring{WorkerID: r.Worker, TraceID: r.Job.TraceID, ModelID: r.Job.ModelID, RunID: r.ID, Failure: msg}))
		}),
		jobs.HandBack: onJob(func(ctx context.Context, r call[struct{}]) (any, error) {
			return jobAck(HandBackScoringHandler{c}.Handle(ctx, HandBackScoring{WorkerID: r.Worker, TraceID: r.Job.TraceID, ModelID: r.Job.ModelID, RunID: r.ID, Reason: r.Reason}))
		}),
	}
}
