package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain/evaluator"
	"github.com/criticml/critic/domain/rewardmodels"
)

// loadEvaluatorPolicy reads the shared evaluator's release policy:
// CRITIC_EVALUATOR_MIN_SLICE (items a slice needs before it can block a
// release, default 30) and CRITIC_EVALUATOR_SLICE_TOLERANCE (the accuracy
// drop allowed on such a slice, default 0.02).
func loadEvaluatorPolicy() (evaluator.Policy, error) {
	p := evaluator.DefaultPolicy()
	if v := os.Getenv("CRITIC_EVALUATOR_MIN_SLICE"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return p, fmt.Errorf("CRITIC_EVALUATOR_MIN_SLICE must be a positive integer, got %q", v)
		}
		p.MinSlice = n
	}
	if v := os.Getenv("CRITIC_EVALUATOR_SLICE_TOLERANCE"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || f >= 1 {
			return p, fmt.Errorf("CRITIC_EVALUATOR_SLICE_TOLERANCE must be a number from 0 to below 1 (an accuracy difference), got %q", v)
		}
		p.Tolerance = f
	}
	return p, nil
}

// errCandidatesUnavailable is what the candidate commands answer until
// candidates can be trained: the first release needs a worker run, and
// this version has no candidate training job yet.
var errCandidatesUnavailable = fmt.Errorf("training shared evaluator candidates is not available in this version: " +
	"the worker tier has no evaluator training job yet, so there is no candidate to report on, release or roll back. " +
	"Benchmarks can be frozen (critic evaluator benchmark freeze) and verified (critic evaluator benchmark verify)")

// cmdEvaluator is `critic evaluator …`, the operator commands of the shared
// evaluator; each appends events to the evaluator stream.
func cmdEvaluator(ctx context.Context, args []string) error {
	const use = "usage: critic evaluator benchmark freeze|verify | train [--base MODEL] | report | release | rollback"
	if len(args) == 0 {
		return usageError{use}
	}
	switch args[0] {
	case "benchmark":
		if len(args) != 2 || (args[1] != "freeze" && args[1] != "verify") {
			return usageError{use}
		}
		if _, err := loadEvaluatorPolicy(); err != nil {
			return err
		}
		in, err := boot(ctx)
		if err != nil {
			return err
		}
		defer in.Close()
		cmds := commands.New(in.store)
		if args[1] == "verify" {
			n, err := cmds.VerifyBenchmarks(ctx)
			if err != nil {
				return err
			}
			fmt.Printf("%d benchmark version(s) rebuild from the log exactly as frozen\n", n)
			return nil
		}
		res, err := cmds.FreezeBenchmark(ctx, "operator:"+os.Getenv("USER"))
		if err != nil {
			return err
		}
		printBenchmark(os.Stdout, res.Benchmark.Version, res.Benchmark.AsOfSeq, len(res.Benchmark.Items), res.Benchmark.SliceCounts)
		verified := 0
		for _, it := range res.Benchmark.Items {
			if it.Source == rewardmodels.SourceVerifiedOutcome {
				verified++
			}
		}
		fmt.Printf("  from reviewed comparisons\t%d\n  from verified outcomes\t%d\n", len(res.Benchmark.Items)-verified, verified)
		return nil
	case "train", "report", "release", "rollback":
		return errCandidatesUnavailable
	}
	return usageError{use}
}

func printBenchmark(w io.Writer, version int, asOf int64, items int, counts map[string]map[string]int) {
	fmt.Fprintf(w, "benchmark version %d frozen at log seq %d: %d items\n", version, asOf, items)
	for _, dim := range []string{evaluator.SliceTool, evaluator.SliceDomain, evaluator.SliceAgent} {
		vals := make([]string, 0, len(counts[dim]))
		for v := range counts[dim] {
			vals = append(vals, v)
		}
		sort.Strings(vals)
		for _, v := range vals {
			fmt.Fprintf(w, "  %s=%s\t%d\n", dim, v, counts[dim][v])
		}
	}
}
