package commands

import (
	"bytes"
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
func (c *Streams) eraseDatasets(ctx context.Context, ownerID, traceID string) error {
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
				if err := c.deleteBlob(ctx, traceID, key); err != nil {
					return err
				}
			}
		}
	}
	if err := c.eraseScoringInputs(ctx, ownerID, traceID); err != nil {
		return err
	}
	if err := c.eraseGepaExamples(ctx, ownerID, traceID); err != nil {
		return err
	}
	return c.eraseCandidateDatasets(ctx, traceID)
}

// eraseScoringInputs deletes the items blob of every scoring run of the
// trace, explicit and background (scoring_run.requested's items_key: the
// trace's rendered text, in clear, for the worker). A finished run needs it
// no more; a run still queued or running loses it, and its worker's read
// fails, which fails the run (the trace is gone anyway). The scoring
// streams are not sealed, so they still open after the trace's key is
// destroyed.
func (c *Streams) eraseScoringInputs(ctx context.Context, ownerID, traceID string) error {
	streams, err := c.store.OwnerStreams(ctx, ownerID, events.ScoringStream(traceID, ""), 0)
	if err != nil {
		return err
	}
	loaded, err := c.store.LoadStreams(ctx, streams)
	if err != nil {
		return err
	}
	for _, s := range streams {
		for _, e := range loaded[s] {
			if e.Type != events.ScoringRunRequested {
				continue
			}
			var req events.ScoringRunRequestedV1
			if err := e.DecodeOrFail(&req); err != nil {
				return err
			}
			if err := c.deleteBlob(ctx, traceID, req.ItemsKey); err != nil {
				return err
			}
		}
	}
	return nil
}

// eraseGepaExamples deletes the examples file of every skill-optimization
// run of the owner that holds one from the trace (gepa_examples.jsonl: one
// line per trace, its text in clear). The file itself says which traces it
// holds, so this needs no run's sealed request. A finished run keeps its
// SKILL.md candidates (they are the optimizer's text, not the trace's).
func (c *Streams) eraseGepaExamples(ctx context.Context, ownerID, traceID string) error {
	streams, err := c.store.OwnerStreams(ctx, ownerID, events.GepaRunStream(""), 0)
	if err != nil {
		return err
	}
	for _, s := range streams {
		key := jobs.GepaExamplesKey(ownerID, strings.TrimPrefix(s, events.GepaRunStream("")))
		raw, err := c.store.Blobs().Get(ctx, key)
		if errors.Is(err, blob.ErrNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("erase trace %s: read %s: %w", traceID, key, err)
		}
		for line := range bytes.SplitSeq(raw, []byte("\n")) {
			var ex rewardmodels.GepaExample
			if json.Unmarshal(line, &ex) == nil && ex.TraceID == traceID {
				if err := c.deleteBlob(ctx, traceID, key); err != nil {
					return err
				}
				break
			}
		}
	}
	return nil
}

// deleteBlob deletes one blob the erasure of traceID reaches; a missing one
// is fine (never written, a repeated erasure).
func (c *Streams) deleteBlob(ctx context.Context, traceID, key string) error {
	if key == "" {
		return nil
	}
	if err := c.store.Blobs().Delete(ctx, key); err != nil && !errors.Is(err, blob.ErrNotFound) {
		return fmt.Errorf("erase trace %s: delete %s: %w", traceID, key, err)
	}
	return nil
}

// eraseCandidateDatasets deletes the stored datasets of shared-evaluator
// candidates with a pair from the trace or a benchmark item quoting it (a
// contributed trace's text, in clear): the shared evaluator follows the same rule as a user's models.
// Its released weights keep serving and cannot unlearn it (the consent
// notice says so).
func (c *Streams) eraseCandidateDatasets(ctx context.Context, traceID string) error {
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
