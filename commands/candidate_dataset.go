package commands

import (
	"context"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/evaluator"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/rewardmodels"
)

// CandidateJobDataset is the blob a candidate job reads: its training
// pairs as step-level action comparisons, each with the trace it came
// from (the trainer's held-out split is by trace), and the benchmark's
// items (b with its text: benchmarkText). Deterministic, so a rebuild from
// the log has the same digest.
func CandidateJobDataset(id string, b events.EvaluatorBenchmarkFrozenV1, pairs []evaluator.TrainingPair) jobs.EvaluatorDataset {
	ds := jobs.EvaluatorDataset{CandidateID: id, BenchmarkVersion: b.Version, Pairs: make([]rewardmodels.DatasetPair, len(pairs)),
		Benchmark: make([]jobs.EvaluatorBenchmarkItem, len(b.Items))}
	for i, p := range pairs {
		at := domain.ActionResponse
		dp := rewardmodels.DatasetPair{Chosen: p.Chosen, Rejected: p.Rejected, TraceIDs: []string{p.TraceID}, Granularity: "step",
			ActionType: &at, AnnotationIDs: p.AnnotationIDs, TraceRevisions: map[string]int{p.TraceID: p.Revision}, Source: p.Source}
		if p.ComparisonID != "" {
			dp.ComparisonIDs = []string{p.ComparisonID}
		}
		if p.FindingID != "" {
			dp.FindingIDs = []string{p.FindingID}
		}
		ds.Pairs[i] = dp
	}
	for i, it := range b.Items {
		ds.Benchmark[i] = jobs.EvaluatorBenchmarkItem{ID: it.ID, Chosen: it.Chosen, Rejected: it.Rejected}
	}
	return ds
}

// CandidateDatasetAsOf is the training data a candidate would get at a log
// position: contributed human supervision of training-side groups only.
// Commands (RequestCandidate, the dataset check) build from it; the read
// model cannot answer as of a log position.
func (c *Streams) CandidateDatasetAsOf(ctx context.Context, asOf int64) ([]evaluator.TrainingPair, error) {
	states, err := c.evaluatorTracesAsOf(ctx, asOf)
	if err != nil {
		return nil, err
	}
	// Corrections: every finding recorded, by any reward model, as of asOf.
	streams, err := c.store.StreamsWithType(ctx, events.RewardModelFindingRecorded, asOf)
	if err != nil {
		return nil, err
	}
	loaded, err := c.store.LoadStreamsAsOf(ctx, streams, asOf)
	if err != nil {
		return nil, err
	}
	corr := evaluator.Corrections{}
	for _, stream := range streams {
		for _, e := range loaded[stream] {
			if e.Type != events.RewardModelFindingRecorded {
				continue
			}
			var p events.RewardModelFindingRecordedV1
			if err := e.Decode(&p); err != nil {
				return nil, err
			}
			corr[p.TraceID] = append(corr[p.TraceID], p)
		}
	}
	return evaluator.CandidateDataset(states, corr), nil
}
