package usecase

import (
	"context"

	"github.com/criticml/critic/domain/evaluator"
	"github.com/criticml/critic/projections/readmodel"
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
	Status     string                         `json:"status"`
	Message    string                         `json:"message"`
	Release    *struct{}                      `json:"release"`
	Benchmarks []readmodel.EvaluatorBenchmark `json:"benchmarks"`
	Policy     EvaluatorPolicy                `json:"policy"`
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
	return EvaluatorStatus{Status: EvaluatorWaiting, Message: waitingMessage, Benchmarks: bs,
		Policy: EvaluatorPolicy{MinSlice: p.MinSlice, SliceTolerance: p.Tolerance, BootstrapRounds: p.Rounds, BenchmarkPercent: evaluator.BenchmarkPercent}}, nil
}
