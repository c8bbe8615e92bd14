package dispatch

import (
	"context"
	"slices"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
)

// evaluatorScoring publishes the shared evaluator's automatic-scoring
// jobs of a batch: one per imported or revised trace, or trace whose owner
// asked to score it again, while a release is live, and one per trace of
// the deployment when a release ships or a rollback brings one back (the
// rescore runs in the background; the old scores stay until the new ones
// land). Whether a release is live is read
// from the event store once per batch, after the batch's trace events were
// appended, so a trace imported around a release is scored either by its
// own job or by the release's rescore.
func (d *Dispatcher) evaluatorScoring(ctx context.Context, envs []events.Envelope) error {
	var traceIDs []string
	var corr string
	for _, e := range envs {
		switch e.Type {
		case events.TraceImported, events.TraceRevised, events.EvaluatorTraceRescoreRequested: // the last: "Score again"
			var p struct {
				TraceID string `json:"trace_id"`
			}
			if err := e.DecodeOrFail(&p); err != nil {
				return err
			}
			traceIDs = append(traceIDs, p.TraceID)
			corr = e.CorrelationID
		}
	}
	if len(traceIDs) > 0 {
		live, err := d.cmds.Streams.EvaluatorLive(ctx)
		if err != nil {
			return err
		}
		if live {
			if err := d.publishScoring(corr, traceIDs); err != nil {
				return err
			}
		}
	}
	for _, e := range envs {
		rescore := e.Type == events.EvaluatorReleased
		if e.Type == events.EvaluatorRolledBack {
			var p events.EvaluatorRolledBackV1
			if err := e.Decode(&p); err != nil {
				return err
			}
			rescore = p.To != 0
		}
		if !rescore {
			continue
		}
		ids, err := d.cmds.Streams.EvaluatorScoringTargets(ctx)
		if err != nil {
			return err
		}
		if err := d.publishScoring(e.CorrelationID, ids); err != nil {
			return err
		}
	}
	return nil
}

// publishScoring publishes one scoring job per trace, in chunks.
func (d *Dispatcher) publishScoring(correlationID string, traceIDs []string) error {
	const chunk = 500
	for ids := range slices.Chunk(traceIDs, chunk) {
		msgs := make([]*message.Message, len(ids))
		for i, id := range ids {
			m, err := jobMessage(id, correlationID, jobs.EvaluatorScoreJob{TraceID: id})
			if err != nil {
				return err
			}
			msgs[i] = m
		}
		if err := d.pub.Publish(jobs.TopicEvaluatorScore, msgs...); err != nil {
			return err
		}
	}
	return nil
}
