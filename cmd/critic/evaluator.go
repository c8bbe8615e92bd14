package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"text/tabwriter"

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

// cmdEvaluator is `critic evaluator …`, the operator commands of the shared
// evaluator; each appends events to the evaluator stream (or reads it).
func cmdEvaluator(ctx context.Context, args []string) error {
	const use = "usage: critic evaluator benchmark freeze|verify | train [--base MODEL] [--epochs N] | report [--candidate ID] | release [--candidate ID] | rollback | cancel --candidate ID | verify"
	if len(args) == 0 {
		return usageError{use}
	}
	fs := flag.NewFlagSet("critic evaluator "+args[0], flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	base := fs.String("base", "", "base model to fine-tune (Hugging Face id or local directory; default "+rewardmodels.DefaultBaseModel+")")
	epochs := fs.Int("epochs", 1, "passes over the training pairs")
	candidate := fs.String("candidate", "", "candidate id (default: the last trained candidate)")
	switch args[0] {
	case "benchmark":
		if len(args) != 2 || (args[1] != "freeze" && args[1] != "verify") {
			return usageError{use}
		}
	case "train", "report", "release", "rollback", "verify", "cancel":
		if err := fs.Parse(args[1:]); err != nil || fs.NArg() != 0 {
			return usageError{use}
		}
		trainFlags := *base != "" || *epochs != 1
		switch {
		case args[0] == "train" && *candidate != "",
			(args[0] == "report" || args[0] == "release") && trainFlags,
			(args[0] == "rollback" || args[0] == "verify") && (trainFlags || *candidate != ""),
			args[0] == "cancel" && (trainFlags || *candidate == ""):
			return usageError{use}
		}
	default:
		return usageError{use}
	}
	policy, err := loadEvaluatorPolicy()
	if err != nil {
		return err
	}
	in, err := boot(ctx)
	if err != nil {
		return err
	}
	defer in.Close()
	cmds := commands.New(in.store)
	operator := "operator:" + os.Getenv("USER")
	switch args[0] {
	case "benchmark":
		if args[1] == "verify" {
			n, err := cmds.Streams.VerifyBenchmarks(ctx)
			if err != nil {
				return err
			}
			fmt.Printf("%d benchmark version(s) rebuild from the log exactly as frozen\n", n)
			return nil
		}
		res, err := cmds.FreezeBenchmark.Handle(ctx, commands.FreezeBenchmark{Operator: operator})
		if err != nil {
			return err
		}
		bm := res.Benchmark
		fmt.Printf("benchmark version %d frozen at log seq %d: %d items\n", bm.Version, bm.AsOfSeq, len(bm.Items))
		for _, dim := range []string{evaluator.SliceTool, evaluator.SliceDomain, evaluator.SliceAgent} {
			for _, v := range slices.Sorted(maps.Keys(bm.SliceCounts[dim])) {
				fmt.Printf("  %s=%s\t%d\n", dim, v, bm.SliceCounts[dim][v])
			}
		}
		verified := 0
		for _, it := range bm.Items {
			if it.Source == rewardmodels.SourceVerifiedOutcome {
				verified++
			}
		}
		fmt.Printf("  from reviewed comparisons\t%d\n  from verified outcomes\t%d\n", len(bm.Items)-verified, verified)
		return nil
	case "train":
		res, err := cmds.RequestCandidate.Handle(ctx, commands.RequestCandidate{BaseModel: *base, Epochs: *epochs, Operator: operator})
		if err != nil {
			return err
		}
		c := res.Candidate
		incumbent := "none (the first release must beat chance)"
		if c.IncumbentRelease != 0 {
			incumbent = fmt.Sprintf("release %d", c.IncumbentRelease)
		}
		fmt.Printf("candidate %s queued for the worker tier\n  base model %s, %d epoch(s)\n  %d training pairs from %d contributing traces of %d account(s) %v\n  tested on benchmark version %d against %s\n"+
			"a worker (critic worker, or the in-process worker of critic run) trains it; then run `critic evaluator report`\n",
			c.CandidateID, c.BaseModel, c.Epochs, c.NumPairs, c.SourceTraces, c.Owners, c.PairSources, c.BenchmarkVersion, incumbent)
		return nil
	case "report":
		c, rep, err := cmds.Streams.CandidateReport(ctx, *candidate, policy)
		if err != nil {
			return err
		}
		printReport(os.Stdout, c, rep, policy)
		return nil
	case "release":
		res, err := cmds.ReleaseCandidate.Handle(ctx, commands.ReleaseCandidate{ID: *candidate, Policy: policy, By: operator})
		if err != nil {
			return err
		}
		fmt.Printf("release %d is live: candidate %s (benchmark version %d, accuracy %.3f against %.3f)\n",
			res.Release.Release, res.Release.CandidateID, res.Release.BenchmarkVersion, res.Release.Overall.Candidate, res.Release.Overall.Incumbent)
		return nil
	case "rollback":
		res, err := cmds.RollbackEvaluator.Handle(ctx, commands.RollbackEvaluator{By: operator})
		if err != nil {
			return err
		}
		if res.Rollback.To == 0 {
			fmt.Printf("release %d rolled back; no release is live, so traces wait for the next one\n", res.Rollback.From)
		} else {
			fmt.Printf("release %d rolled back; release %d is live again\n", res.Rollback.From, res.Rollback.To)
		}
		return nil
	case "cancel":
		if _, err := cmds.CancelCandidate.Handle(ctx, commands.CancelCandidate{ID: *candidate, By: operator}); err != nil {
			return err
		}
		fmt.Printf("candidate %s cancelled (evaluator.candidate_failed)\n", *candidate)
		return nil
	case "verify":
		b, err := cmds.Streams.VerifyBenchmarks(ctx)
		if err != nil {
			return err
		}
		d, err := cmds.Streams.VerifyCandidateDatasets(ctx)
		if err != nil {
			return err
		}
		r, err := cmds.Streams.VerifyReleases(ctx)
		if err != nil {
			return err
		}
		fmt.Printf("from the log: %d benchmark version(s), %d candidate dataset(s) and %d release(s) rebuild exactly as recorded\n", b, d, r)
		return nil
	}
	return usageError{use}
}

// printReport prints a candidate's gate report: overall and per-slice
// accuracy of incumbent and candidate, the paired-bootstrap interval of the
// difference and each verdict.
func printReport(w io.Writer, c *evaluator.Candidate, r evaluator.Report, p evaluator.Policy) {
	inc := "chance (no release yet)"
	if c.IncumbentRelease != 0 {
		inc = fmt.Sprintf("release %d", c.IncumbentRelease)
	}
	fmt.Fprintf(w, "candidate %s on benchmark version %d against %s\n", c.CandidateID, r.BenchmarkVersion, inc)
	fmt.Fprintf(w, "policy: slices with at least %d items may not lose more than %.3f; %d paired bootstrap rounds, 95%% intervals\n\n", p.MinSlice, p.Tolerance, p.Rounds)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "slice\titems\tincumbent\tcandidate\tdiff\t95% interval\tverdict")
	row := func(x evaluator.Comparison, verdict string) {
		fmt.Fprintf(tw, "%s\t%d\t%.3f\t%.3f\t%+.3f\t[%+.3f, %+.3f]\t%s\n", x.Name, x.Items, x.Incumbent, x.Candidate, x.Diff, x.Low, x.High, verdict)
	}
	overall := "pass"
	if !(r.Overall.Low > 0) {
		overall = "FAIL (interval does not exclude zero)"
	}
	row(r.Overall, overall)
	for _, s := range r.Slices {
		v := "pass"
		switch {
		case s.Regressed:
			v = "FAIL (regressed)"
		case !s.Populated:
			v = "not gated (too few items)"
		}
		row(s, v)
	}
	tw.Flush()
	if r.Pass {
		fmt.Fprintln(w, "\nverdict: PASS — `critic evaluator release` will release it")
		return
	}
	fmt.Fprintln(w, "\nverdict: FAIL — `critic evaluator release` refuses it:")
	for _, reason := range r.Reasons {
		fmt.Fprintln(w, "  - "+reason)
	}
}
