package commands

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/criticml/critic/domain/evaluator"
	"github.com/criticml/critic/domain/events"
)

// VerifyCandidateDatasets rebuilds every candidate's dataset from the log
// as of its cut and compares its digest with the one recorded: every
// candidate, and so every release, is reproducible from the log.
// A check of the log against itself, so it reads the log, not the read model.
func (c *Streams) VerifyCandidateDatasets(ctx context.Context) (int, error) {
	s, err := c.EvaluatorState(ctx)
	if err != nil {
		return 0, err
	}
	for _, cand := range s.Candidates {
		pairs, err := c.CandidateDatasetAsOf(ctx, cand.AsOfSeq)
		if err != nil {
			return 0, err
		}
		b := s.Benchmark(cand.BenchmarkVersion)
		if b == nil {
			return 0, fmt.Errorf("candidate %s names benchmark version %d, which the stream does not hold", cand.CandidateID, cand.BenchmarkVersion)
		}
		withText, _, err := c.benchmarkText(ctx, *b)
		if err != nil {
			return 0, err
		}
		raw, err := json.Marshal(CandidateJobDataset(cand.CandidateID, withText, pairs))
		if err != nil {
			return 0, err
		}
		sum := sha256.Sum256(raw)
		if hex.EncodeToString(sum[:]) != cand.DatasetSHA256 {
			return 0, fmt.Errorf("candidate %s: its dataset does not match a rebuild from the log as of seq %d", cand.CandidateID, cand.AsOfSeq)
		}
	}
	return len(s.Candidates), nil
}

// VerifyReleases replays the evaluator stream and, at every release,
// decides it again from what the stream held just before it (the
// candidate's recorded margins, its benchmark, the live release) under the
// policy it recorded: every release must come out the same, with the same
// figures. It returns how many releases it checked.
func (c *Streams) VerifyReleases(ctx context.Context) (int, error) {
	evs, err := c.loadStream(ctx, events.EvaluatorStream)
	if err != nil {
		return 0, err
	}
	var s evaluator.State
	n := 0
	for _, e := range evs {
		if e.Type == events.EvaluatorReleased {
			var p events.EvaluatorReleasedV1
			if err := e.Decode(&p); err != nil {
				return n, err
			}
			cand := s.Candidate(p.CandidateID)
			if cand == nil {
				return n, fmt.Errorf("release %d names candidate %s, which the stream did not hold before it", p.Release, p.CandidateID)
			}
			again, _, err := s.DecideRelease(cand, evaluator.PolicyFromEvent(p.Policy), p.ReleasedBy)
			if err != nil {
				return n, fmt.Errorf("release %d does not replay: %w", p.Release, err)
			}
			if !reflect.DeepEqual(again, p) {
				return n, fmt.Errorf("release %d does not replay to the same release and figures", p.Release)
			}
			n++
		}
		s.Apply(e)
	}
	return n, nil
}

// VerifyBenchmarks rebuilds every frozen benchmark version from the log as
// of its cut and reports the first that differs from what was stored: the
// check that every version is reproducible from the log. Text is compared
// where the version stored it (versions frozen before issue 37); an item
// the rebuild lacks passes only when its traces were erased since.
func (c *Streams) VerifyBenchmarks(ctx context.Context) (int, error) {
	prev, _, err := c.benchmarks(ctx)
	if err != nil {
		return 0, err
	}
	erasedStreams, err := c.store.StreamsWithType(ctx, events.TraceErased, 0)
	if err != nil {
		return 0, err
	}
	erased := map[string]bool{}
	for _, s := range erasedStreams {
		erased[strings.TrimPrefix(s, events.TraceStream(""))] = true
	}
	isErased := func(it events.EvaluatorItem) bool {
		return erased[it.TraceID] || (it.RejectedTraceID != "" && erased[it.RejectedTraceID])
	}
	for _, p := range prev {
		states, err := c.evaluatorTracesAsOf(ctx, p.AsOfSeq)
		if err != nil {
			return 0, err
		}
		b := evaluator.FreezeWith(p.ItemRules, p.Version, p.AsOfSeq, states)
		want := slices.DeleteFunc(append([]events.EvaluatorItem{}, p.Items...), isErased)
		got := b.Items
		if len(want) > 0 && want[0].Chosen == "" {
			got = withoutText(got)
		}
		got = slices.DeleteFunc(slices.Clone(got), isErased)
		if !reflect.DeepEqual(got, want) {
			return 0, fmt.Errorf("benchmark version %d does not match a rebuild from the log as of seq %d", p.Version, p.AsOfSeq)
		}
	}
	return len(prev), nil
}
