package usecase

import (
	"context"
	"time"

	"github.com/criticml/critic/domain/evaluator"
)

// Evaluator statuses of GET /evaluator.
const (
	EvaluatorWaiting = "waiting_for_first_release"
)

// EvaluatorPolicy is the release policy as GET /evaluator shows it.
type EvaluatorPolicy struct {
	MinSlice         int     `json:"min_slice"`
	SliceTolerance   float64 `json:"slice_tolerance"`
	BootstrapRounds  int     `json:"bootstrap_rounds"`
	BenchmarkPercent int     `json:"benchmark_percent"`
}

// EvaluatorStatus is GET /evaluator: the released version and its
// benchmark figures, or that the deployment waits for its first release,
// and the frozen benchmark versions.
type EvaluatorStatus struct {
	Status     string               `json:"status"`
	Message    string               `json:"message"`
	Release    *struct{}            `json:"release"`
	Benchmarks []EvaluatorBenchmark `json:"benchmarks"`
	Policy     EvaluatorPolicy      `json:"policy"`
}

// EvaluatorBenchmark is a frozen benchmark version as every account sees
// it: sizes only. Slice values (tool names, domains, agents) come from every
// contributing account, so they are not shown to users.
type EvaluatorBenchmark struct {
	Version  int       `json:"version"`
	AsOfSeq  int64     `json:"as_of_seq"`
	Items    int       `json:"items"`
	FrozenAt time.Time `json:"frozen_at"`
	// Slices is, per dimension (tool, domain, agent), how many slices the
	// benchmark has and how many are populated enough to block a release.
	Slices map[string]SliceSizes `json:"slices"`
}

// SliceSizes counts one dimension's slices.
type SliceSizes struct {
	Slices    int `json:"slices"`
	Populated int `json:"populated"`
}

// waitingMessage says what the first release needs, in the spec's terms.
const waitingMessage = "No shared evaluator is released on this deployment yet, so traces wait for the first release. " +
	"It needs reviewed comparisons from contributing traces, a frozen benchmark (critic evaluator benchmark freeze) and a candidate trained by the worker tier that passes the release gates. " +
	"Training candidates is not available in this version yet, so no release can exist."

// Evaluator answers GET /evaluator. No candidate can be trained in this
// version, so there is never a release to show: the status says so rather
// than pretending one exists.
func (b Backend) Evaluator(ctx context.Context, p evaluator.Policy) (EvaluatorStatus, error) {
	bs, err := b.Queries.EvaluatorBenchmarks(ctx)
	if err != nil {
		return EvaluatorStatus{}, err
	}
	views := make([]EvaluatorBenchmark, 0, len(bs))
	for _, b := range bs {
		v := EvaluatorBenchmark{Version: b.Version, AsOfSeq: b.AsOfSeq, Items: b.Items, FrozenAt: b.FrozenAt, Slices: map[string]SliceSizes{}}
		for _, dim := range []string{evaluator.SliceTool, evaluator.SliceDomain, evaluator.SliceAgent} {
			var sz SliceSizes
			for _, n := range b.SliceCounts[dim] {
				sz.Slices++
				if n >= p.MinSlice {
					sz.Populated++
				}
			}
			v.Slices[dim] = sz
		}
		views = append(views, v)
	}
	return EvaluatorStatus{Status: EvaluatorWaiting, Message: waitingMessage, Benchmarks: views,
		Policy: EvaluatorPolicy{MinSlice: p.MinSlice, SliceTolerance: p.Tolerance, BootstrapRounds: p.Rounds, BenchmarkPercent: evaluator.BenchmarkPercent}}, nil
}
