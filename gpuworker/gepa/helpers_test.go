package gepa

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/gpuworker/model"
	"github.com/criticml/critic/gpuworker/train"
	"github.com/criticml/critic/platform/llm"
	"github.com/criticml/critic/platform/llm/llmtest"
)

const tinyTok = "../testdata/tinytok"

// Replies the scripted task model gives: it follows the skill it finds in
// its system message, as a real agent would.
const (
	checkedReply  = "Let me check the order first: I looked it up with lookup_order and it was delivered 12 days ago, so the refund is allowed."
	promisedReply = "Sure, your refund is on its way! You will get your money back soon."
	checkBody     = "Before promising a refund, check the order with lookup_order and read days_since_delivery."
)

func refundInput(i int) string {
	items := []string{"blender", "lamp", "kettle", "jacket", "chair", "phone case", "toaster", "backpack", "mug", "desk"}
	return fmt.Sprintf("I want a refund for order %d, the %s arrived broken.", 1100+i*7, items[i%len(items)])
}

var (
	rmOnce sync.Once
	rmDir  string
	rmErr  error
)

// trainedModel trains, once per test binary, a tiny reward model on pairs
// where replies that check the order before promising a refund are chosen.
func trainedModel(t *testing.T) string { t.Helper(); return trainedModelB(t) }

func trainedModelB(t testing.TB) string {
	t.Helper()
	rmOnce.Do(func() {
		root, err := os.MkdirTemp("", "gepa-rm-")
		if err != nil {
			rmErr = err
			return
		}
		base := filepath.Join(root, "base")
		var sink strings.Builder
		if rmErr = train.CLI(context.Background(), []string{"init", "--arch", "qwen3", "--hidden", "32", "--layers", "1", "--heads", "4",
			"--kv-heads", "2", "--head-dim", "8", "--intermediate", "64", "--tokenizer", tinyTok, "--out", base}, nil, &sink, &sink); rmErr != nil {
			return
		}
		var pairs []train.Pair
		checks := []string{checkedReply, "I will check the order with lookup_order before any refund.", "Let me check the order and its delivery date first."}
		promises := []string{promisedReply, "Refund approved, no problem!", "Of course, I have refunded you already."}
		for i := range 24 {
			in := Example{Messages: []Message{{Role: "user", Content: refundInput(i)}}}
			pairs = append(pairs, train.Pair{Chosen: RenderReply(1, in, checks[i%3]), Rejected: RenderReply(1, in, promises[(i/3)%3]),
				TraceID: fmt.Sprintf("train-%02d", i), Granularity: "trace"})
		}
		out := filepath.Join(root, "job")
		var res *train.Result
		res, rmErr = train.Train(context.Background(), train.Options{Pairs: pairs, BaseDir: base, OutDir: out, Epochs: 4, LR: 3e-3, MaxLen: 256})
		if rmErr == nil {
			rmDir = res.ModelDir
		}
	})
	require.NoError(t, rmErr)
	return rmDir
}

// scorer loads the trained checkpoint.
func scorer(t *testing.T) *RewardScorer { t.Helper(); return scorerFrom(t, trainedModel(t)) }

func scorerFrom(t testing.TB, dir string) *RewardScorer {
	t.Helper()
	rm, err := model.LoadRewardModel(dir)
	require.NoError(t, err)
	t.Cleanup(rm.Model.Finalize)
	s, err := NewRewardScorer(rm)
	require.NoError(t, err)
	return s
}

func examples(n int) []Example {
	sys := "You are the support agent of a web shop."
	out := make([]Example, n)
	for i := range out {
		out[i] = Example{TraceID: fmt.Sprintf("trace-%02d", i), Messages: []Message{{Role: "user", Content: refundInput(i + 30)}},
			Feedback: []string{"promised a refund without checking the order"}}
		if i%2 == 0 {
			out[i].System = &sys
		}
	}
	return out
}

// followSkill is the scripted task model.
func followSkill(req llmtest.Request) llmtest.Reply {
	if len(req.Messages) > 0 && req.Messages[0].Role == "system" && strings.Contains(req.Messages[0].Content, "check the order") {
		return llmtest.Reply{Content: checkedReply}
	}
	return llmtest.Reply{Content: promisedReply}
}

// reflect is the scripted reflection model: it names the skill, proposes
// checkBody for a body that lacks it, and otherwise appends a note numbered
// by how many rejections it was shown (so it never repeats itself).
func reflect(req llmtest.Request) llmtest.Reply {
	p := req.Last()
	if strings.Contains(p, "You are naming a skill") {
		return llmtest.Reply{Content: "<name>refund-policy</name>\n<description>Use when a customer asks for a refund, return, or exchange.</description>"}
	}
	cur, _ := extractTag(p, "current_skill_body")
	if !strings.Contains(cur, "check the order") {
		return llmtest.Reply{Content: "Here is the new body.\n" + openBody + "\n" + checkBody + "\n\n```bash\nlookup_order 1182\n```\n" + closeBody}
	}
	n := strings.Count(p, "<rejected ")
	return llmtest.Reply{Content: openBody + "\n" + cur + fmt.Sprintf("\n- Note %d: be brief.", n) + "\n" + closeBody}
}

func client(url, name string) *llm.Client {
	return llm.New(llm.Model{Provider: "openai", Name: name, APIBase: url}, llm.Options{MaxRetries: llm.NoRetries, RetryInvalid: llm.NoRetries})
}

type servers struct{ task, refl *llmtest.Server }

func newServers(t *testing.T) servers {
	s := servers{task: llmtest.New(t), refl: llmtest.New(t)}
	s.task.Handle(followSkill)
	s.refl.Handle(reflect)
	return s
}

func (s servers) config(t *testing.T, exs []Example, budget int) Config {
	return Config{Examples: exs, Task: client(s.task.URL, "task"), Reflection: client(s.refl.URL, "reflection"),
		Scorer: scorer(t), MaxMetricCalls: budget}
}
