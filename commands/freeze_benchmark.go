package commands

import (
	"context"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/evaluator"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/traces"
)

// FreezeBenchmarkResult is the new benchmark version.
type FreezeBenchmarkResult struct {
	Result
	Benchmark events.EvaluatorBenchmarkFrozenV1
}

// evaluatorTracesAsOf loads, as of a log position, every trace that had a
// consent event then (a trace that never opted in has none and cannot
// contribute): what the shared evaluator may read.
func (c *Streams) evaluatorTracesAsOf(ctx context.Context, asOf int64) ([]traces.State, error) {
	streams, err := c.store.StreamsWithType(ctx, events.TraceContributionSet, asOf)
	if err != nil {
		return nil, err
	}
	loaded, err := c.store.LoadStreamsAsOf(ctx, streams, asOf)
	if err != nil {
		return nil, err
	}
	out := make([]traces.State, 0, len(streams))
	for _, stream := range streams {
		var st traces.State
		for _, e := range loaded[stream] {
			st.Apply(e)
		}
		out = append(out, st)
	}
	return out, nil
}

// benchmarks returns the evaluator stream's frozen versions and its version.
func (c *Streams) benchmarks(ctx context.Context) ([]events.EvaluatorBenchmarkFrozenV1, int64, error) {
	evs, err := c.loadStream(ctx, events.EvaluatorStream)
	if err != nil {
		return nil, 0, err
	}
	var out []events.EvaluatorBenchmarkFrozenV1
	var version int64
	for _, e := range evs {
		version = e.Version
		if e.Type == events.EvaluatorBenchmarkFrozen {
			var p events.EvaluatorBenchmarkFrozenV1
			if err := e.Decode(&p); err != nil {
				return nil, 0, err
			}
			out = append(out, p)
		}
	}
	return out, version, nil
}

// FreezeBenchmark is `critic evaluator benchmark freeze`: a new benchmark
// version from the decided reviewed comparisons of contributing traces in
// benchmark groups, cut at the log's head. An empty benchmark is refused:
// the first release needs reviewed data.
type FreezeBenchmark struct {
	Operator string
}

// FreezeBenchmarkHandler runs FreezeBenchmark.
type FreezeBenchmarkHandler struct{ *Streams }

func (c FreezeBenchmarkHandler) Handle(ctx context.Context, cmd FreezeBenchmark) (FreezeBenchmarkResult, error) {
	var out FreezeBenchmarkResult
	r, err := retryOnConflict(func() (Result, error) {
		prev, version, err := c.benchmarks(ctx)
		if err != nil {
			return Result{}, err
		}
		head, err := c.store.Head(ctx)
		if err != nil {
			return Result{}, err
		}
		states, err := c.evaluatorTracesAsOf(ctx, head)
		if err != nil {
			return Result{}, err
		}
		b := evaluator.Freeze(len(prev)+1, head, states)
		if len(b.Items) == 0 {
			return Result{}, &domain.ConflictError{Code: "no_benchmark_data",
				Message: "no reviewed comparison of a contributing trace falls in a benchmark group yet: opt traces in (PUT /traces/{id}/contribution) and review comparisons (POST /comparisons), or import traces with a verified outcome (metadata.outcome), first"}
		}
		out.Benchmark = events.EvaluatorBenchmarkFrozenV1{Version: b.Version, AsOfSeq: b.AsOfSeq, BenchmarkPercent: evaluator.BenchmarkPercent,
			Items: b.Items, ItemRules: evaluator.CurrentItemRules, SliceCounts: evaluator.SliceCounts(b.Items), Frozen: cmd.Operator}
		// The event holds the items' ids, never their text: the system
		// stream is sealed with no trace's key (issue 37).
		stored := out.Benchmark
		stored.Items = withoutText(b.Items)
		return c.appendEvent(ctx, Actor{}, events.EvaluatorStream, events.SystemOwnerID, version, events.EvaluatorBenchmarkFrozen, stored)
	})
	if err != nil {
		return FreezeBenchmarkResult{}, err
	}
	out.Result = r
	return out, nil
}

// withoutText is items with their pair's text left out: what a frozen
// version's event stores.
func withoutText(items []events.EvaluatorItem) []events.EvaluatorItem {
	out := make([]events.EvaluatorItem, len(items))
	for i, it := range items {
		it.Chosen, it.Rejected = "", ""
		out[i] = it
	}
	return out
}

// benchmarkText is a frozen version with its items' text rebuilt from the
// log as of its cut, and the ids of the items that dropped out: those whose
// trace was erased since (its events no longer open, so the rebuild does not
// find them). A version frozen with its text in the event gets the same
// text back, from the rebuild (VerifyBenchmarks checks they agree).
func (c *Streams) benchmarkText(ctx context.Context, b events.EvaluatorBenchmarkFrozenV1) (events.EvaluatorBenchmarkFrozenV1, []string, error) {
	states, err := c.evaluatorTracesAsOf(ctx, b.AsOfSeq)
	if err != nil {
		return b, nil, err
	}
	rebuilt := map[string]events.EvaluatorItem{}
	for _, it := range evaluator.FreezeWith(b.ItemRules, b.Version, b.AsOfSeq, states).Items {
		rebuilt[it.ID] = it
	}
	out := b
	out.Items = make([]events.EvaluatorItem, 0, len(b.Items))
	var erased []string
	for _, it := range b.Items {
		r, ok := rebuilt[it.ID]
		if !ok {
			erased = append(erased, it.ID)
			continue
		}
		it.Chosen, it.Rejected = r.Chosen, r.Rejected
		out.Items = append(out.Items, it)
	}
	return out, erased, nil
}
