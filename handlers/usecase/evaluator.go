package usecase

import (
	"context"
	"fmt"
	"time"

	"github.com/criticml/critic/domain/evaluator"
)

// Evaluator statuses of GET /evaluator.
const (
	EvaluatorWaiting  = "waiting_for_first_release"
	EvaluatorReleased = "released"
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
	Release    *EvaluatorRelease    `json:"release"`
	Releases   []EvaluatorRelease   `json:"releases"`
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

// EvaluatorRelease is a release as every account sees it: its benchmark
// figures overall and how many slices gated it (slice names are other
// accounts' data and stay with operators).
type EvaluatorRelease struct {
	Version          int                     `json:"version"`
	CandidateID      string                  `json:"candidate_id"`
	BenchmarkVersion int                     `json:"benchmark_version"`
	Replaces         *int                    `json:"replaces"`
	Live             bool                    `json:"live"`
	ReleasedAt       time.Time               `json:"released_at"`
	RolledBackAt     *time.Time              `json:"rolled_back_at"`
	Benchmark        EvaluatorReleaseFigures `json:"benchmark"`
}

// EvaluatorReleaseFigures are a release's benchmark figures against the
// incumbent it replaced, under the policy it was released with.
type EvaluatorReleaseFigures struct {
	Items             int     `json:"items"`
	Accuracy          float64 `json:"accuracy"`
	IncumbentAccuracy float64 `json:"incumbent_accuracy"`
	Diff              float64 `json:"diff"`
	DiffLow           float64 `json:"diff_low"`
	DiffHigh          float64 `json:"diff_high"`
	Slices            int     `json:"slices"`
	GatedSlices       int     `json:"gated_slices"`
	MinSlice          int     `json:"min_slice"`
	SliceTolerance    float64 `json:"slice_tolerance"`
}

// waitingMessage says what the first release needs, in the spec's terms.
const waitingMessage = "No shared evaluator release is live on this deployment, so traces wait for the first release (after a rollback of the only one: for the next). " +
	"A release needs reviewed comparisons from contributing traces, a frozen benchmark (critic evaluator benchmark freeze) and a candidate trained by the worker tier (critic evaluator train) that passes the release gates (critic evaluator report, then critic evaluator release)."

// Evaluator answers GET /evaluator: the live release and its benchmark
// figures, every release, the frozen benchmark versions and the policy
// (the deployment's; nil → spec defaults) — or that the deployment waits
// for its first release.
func (b Backend) Evaluator(ctx context.Context, policy *evaluator.Policy) (EvaluatorStatus, error) {
	p := evaluator.DefaultPolicy()
	if policy != nil {
		p = *policy
	}
	bs, err := b.Queries.EvaluatorBenchmarks(ctx)
	if err != nil {
		return EvaluatorStatus{}, err
	}
	rels, err := b.Queries.EvaluatorReleases(ctx)
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
	out := EvaluatorStatus{Status: EvaluatorWaiting, Message: waitingMessage, Benchmarks: views, Releases: make([]EvaluatorRelease, 0, len(rels)),
		Policy: EvaluatorPolicy{MinSlice: p.MinSlice, SliceTolerance: p.Tolerance, BootstrapRounds: p.Rounds, BenchmarkPercent: evaluator.BenchmarkPercent}}
	for _, r := range rels {
		v := EvaluatorRelease{Version: r.Release, CandidateID: r.CandidateID, BenchmarkVersion: r.BenchmarkVersion, Live: r.Live,
			ReleasedAt: r.ReleasedAt, RolledBackAt: r.RolledBackAt,
			Benchmark: EvaluatorReleaseFigures{Items: r.Overall.Items, Accuracy: r.Overall.Candidate, IncumbentAccuracy: r.Overall.Incumbent,
				Diff: r.Overall.Diff, DiffLow: r.Overall.Low, DiffHigh: r.Overall.High, Slices: len(r.Slices),
				MinSlice: r.Policy.MinSlice, SliceTolerance: r.Policy.Tolerance}}
		if r.Replaces != 0 {
			v.Replaces = new(r.Replaces)
		}
		for _, sl := range r.Slices {
			if sl.Populated {
				v.Benchmark.GatedSlices++
			}
		}
		out.Releases = append(out.Releases, v)
		if r.Live {
			out.Release = new(v)
			out.Status = EvaluatorReleased
			out.Message = fmt.Sprintf("Release %d of the shared evaluator is live: it scores every imported and updated trace.", r.Release)
		}
	}
	return out, nil
}
