package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/platform/blob"
)

// eraseDatasets deletes the stored training datasets of the owner's models
// that were trained on the trace: a dataset holds its pairs' text in clear
// (the worker reads it), so a deleted trace would live on there (issue 37).
// The models keep their weights and keep scoring; their page and
// `critic audit model` say how many of their traces were erased since.
// Every attempt's dataset goes, and its feedback-extraction inputs (the
// traces' text the worker's classifier read; a claim writes them afresh);
// a missing one is fine (an attempt that never built one, a repeated
// erasure).
func (c *Commands) eraseDatasets(ctx context.Context, ownerID, traceID string) error {
	streams, err := c.store.OwnerStreams(ctx, ownerID, events.RewardModelStream(""), 0)
	if err != nil {
		return err
	}
	for _, s := range streams {
		st, err := c.Model(ctx, strings.TrimPrefix(s, events.RewardModelStream("")))
		if err != nil {
			return err
		}
		if !slices.Contains(st.Requested.TraceIDs, traceID) {
			continue
		}
		for a := 1; a <= st.Attempt; a++ {
			for _, key := range []string{DatasetKey(st.OwnerID, st.ID, a), jobs.ExtractionInputsKey(st.OwnerID, st.ID, a)} {
				if err := c.store.Blobs().Delete(ctx, key); err != nil && !errors.Is(err, blob.ErrNotFound) {
					return fmt.Errorf("erase trace %s: delete %s: %w", traceID, key, err)
				}
			}
		}
	}
	return c.eraseCandidateDatasets(ctx, traceID)
}

// eraseCandidateDatasets deletes the stored datasets of shared-evaluator
// candidates with a pair from the trace or a benchmark item quoting it (a
// contributed trace's text, in clear): the shared evaluator follows the same rule as a user's models.
// Its released weights keep serving and cannot unlearn it (the consent
// notice says so).
func (c *Commands) eraseCandidateDatasets(ctx context.Context, traceID string) error {
	s, err := c.EvaluatorState(ctx)
	if err != nil {
		return err
	}
	for _, cand := range s.Candidates {
		raw, err := c.store.Blobs().Get(ctx, cand.DatasetKey)
		if errors.Is(err, blob.ErrNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("erase trace %s: read candidate dataset %s: %w", traceID, cand.DatasetKey, err)
		}
		var ds jobs.EvaluatorDataset
		if err := json.Unmarshal(raw, &ds); err != nil {
			return fmt.Errorf("erase trace %s: candidate dataset %s: %w", traceID, cand.DatasetKey, err)
		}
		// The dataset also carries its benchmark version's items' text.
		quoted := false
		if b := s.Benchmark(cand.BenchmarkVersion); b != nil {
			quoted = slices.ContainsFunc(b.Items, func(it events.EvaluatorItem) bool { return it.TraceID == traceID || it.RejectedTraceID == traceID })
		}
		if !quoted && !slices.ContainsFunc(ds.Pairs, func(p rewardmodels.DatasetPair) bool { return slices.Contains(p.TraceIDs, traceID) }) {
			continue
		}
		if err := c.store.Blobs().Delete(ctx, cand.DatasetKey); err != nil && !errors.Is(err, blob.ErrNotFound) {
			return fmt.Errorf("erase trace %s: delete candidate dataset %s: %w", traceID, cand.DatasetKey, err)
		}
	}
	return nil
}
