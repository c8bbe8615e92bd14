// Package gepa is Critic's skill optimizer (spec 004, spec 001 "Skill
// creation (GEPA)"): it evolves the body of a SKILL.md with GEPA's loop
// (Agrawal et al., 2025) — run the agent's task model with the skill on the
// reward model's own traces, score each reply with the reward model's
// calibrated score, show the replies, scores and reviewers' comments to a
// reflection model, and keep a per-example Pareto front of candidates.
//
// It is written from an understanding of the reference implementation
// (gepa-ai/gepa; see /work/shared/notes/gepa.md) and differs where the
// reference is known to be weak:
//
//   - parent sampling weights a candidate by the examples it is best on
//     without the reference's redundancy pruning, and the best candidate by
//     mean always keeps weight, so it can always be drawn (gepa#432);
//   - the parent's scores and replies on a minibatch come from its full
//     evaluation instead of a fresh re-roll (gepa#4, #357), and an accepted
//     child's minibatch results count towards its full evaluation;
//   - proposals are delimited by tags, not ``` fences, so a body with code
//     blocks survives, and a reply without a complete block is rejected
//     rather than adopted verbatim (gepa#390);
//   - empty, identical and already-tried proposals are rejected before any
//     metric call is spent, and rejected proposals are shown to later
//     reflection calls from the same parent (gepa#379);
//   - the score is written into the feedback (gepa#288);
//   - max_metric_calls is a hard cap, checked before every evaluation, not
//     only at the top of an iteration (gepa#375), and a budget too small to
//     call the reflection model even once fails before spending anything;
//   - with at least 8 examples a fifth is held out by trace, selection uses
//     the rest, and the seed's and best skill's held-out scores are
//     reported (gepa#308);
//   - no merge (one text component: a merge would copy a parent).
//
// The run is deterministic for a seed and the same model replies: one PCG
// stream drives parent and minibatch draws, examples are evaluated
// concurrently but results are placed by index, and ties break by index.
package gepa

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/platform/llm"
)

// Defaults (spec 001 "Request", reference defaults for the minibatch).
const (
	DefaultMaxMetricCalls = 40
	DefaultMinibatch      = 3
	DefaultConcurrency    = 8
	// MinHoldoutExamples is how many examples a run needs before it holds
	// a fifth out: below it every example is needed to choose.
	MinHoldoutExamples = 8
	// maxStalls ends the search after this many consecutive proposals
	// rejected before evaluation (empty, identical, repeated, malformed):
	// they cost no metric calls, so without a limit a reflection model that
	// keeps repeating itself would loop forever.
	maxStalls = 5
	// maxRememberedRejections caps the rejected bodies shown to reflection.
	maxRememberedRejections = 6
	taskMaxTokens           = 1024
	reflectionMaxTokens     = 4096
)

// Message is one input message of an example.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Example is one line of gepa_examples.jsonl (spec 001 job contract): a
// trace's own system prompt (nil when it has none), its non-system steps
// before the first assistant reply, and the feedback reviewers and training
// evidence recorded on it.
type Example struct {
	TraceID  string    `json:"trace_id"`
	System   *string   `json:"system"`
	Messages []Message `json:"messages"`
	Feedback []string  `json:"feedback"`
}

// Chatter is a model the run calls: *llm.Client.
type Chatter interface {
	Chat(ctx context.Context, msgs []llm.ChatMessage, maxTokens int) (llm.ChatResponse, error)
}

// Scorer returns the calibrated score, sigmoid((reward − mean)/std), of
// each rendered conversation.
type Scorer interface {
	Score(ctx context.Context, texts []string) ([]float64, error)
}

// Config is one run's inputs.
type Config struct {
	Examples       []Example
	Task           Chatter
	Reflection     Chatter
	Scorer         Scorer
	MaxMetricCalls int    // default 40; a hard cap
	Minibatch      int    // default 3
	Concurrency    int    // examples evaluated at once; default 8
	Seed           uint64 // default 0
	// InputVersion is the reward model's rendering (domain.RenderVersion);
	// 0 or 1 is the default rendering.
	InputVersion int
	// Log receives a line per step of the run (the worker log).
	Log io.Writer
	// Progress is called after the seed and after every iteration.
	Progress func(Progress)
	// OnCandidate is called for every proposal evaluated on a minibatch.
	OnCandidate func(CandidateReport)
}

// Progress is where a running search stands.
type Progress struct {
	Iteration      int     `json:"iteration"`
	MetricCalls    int     `json:"metric_calls"`
	MaxMetricCalls int     `json:"max_metric_calls"`
	BestScore      float64 `json:"best_score"`
}

// CandidateReport describes one evaluated proposal (gepa_run.candidate_evaluated).
type CandidateReport struct {
	Iteration int    `json:"iteration"`
	Parent    int    `json:"parent"`
	Skill     string `json:"skill"`
	// Index is the candidate's place in Result.Candidates, -1 when rejected.
	Index                int      `json:"index"`
	Accepted             bool     `json:"accepted"`
	MinibatchScore       float64  `json:"minibatch_score"`
	ParentMinibatchScore float64  `json:"parent_minibatch_score"`
	Score                *float64 `json:"score"` // mean over all search examples; nil when rejected
	MetricCalls          int      `json:"metric_calls"`
}

// Candidate is one skill of the pool and its mean score.
type Candidate struct {
	Skill string  `json:"skill"`
	Score float64 `json:"score"`
}

// Holdout is the honest number: the seed's and the best skill's mean
// scores on examples the search never saw.
type Holdout struct {
	Examples  int     `json:"examples"`
	SeedScore float64 `json:"seed_score"`
	BestScore float64 `json:"best_score"`
}

// Result is result.json (spec 001 job contract) plus what the reference's
// users asked for: the held-out scores and the calls the run used.
// BestScore and SeedScore are means over every example, search and held-out
// alike (the spec's figures); Candidates' scores are over the search
// examples, the ones every candidate ran on, so they compare with each
// other; Holdout has the held-out means alone.
type Result struct {
	SkillName        string      `json:"skill_name"`
	SkillDescription string      `json:"skill_description"`
	BestSkill        string      `json:"best_skill"`
	BestScore        float64     `json:"best_score"`
	SeedSkill        string      `json:"seed_skill"`
	SeedScore        float64     `json:"seed_score"`
	Candidates       []Candidate `json:"candidates"`
	Holdout          *Holdout    `json:"holdout"`
	MetricCalls      int         `json:"metric_calls"`
	MaxMetricCalls   int         `json:"max_metric_calls"`
	Iterations       int         `json:"iterations"`
	Proposals        int         `json:"proposals"`
	Accepted         int         `json:"accepted"`
	PromptVersion    string      `json:"prompt_version"`
}

// Typed failures (spec 004 "When a run fails").
var (
	// ErrNoExamples: no selected trace has input before its first assistant step.
	ErrNoExamples = errors.New("no examples: none of the reward model's traces has input before its first assistant step")
	// ErrBudget: the budget cannot pay for the seed and one proposal, so the
	// reflection model would never be called.
	ErrBudget = errors.New("the metric-call budget ran out while evaluating the seed skill")
)

// TaskError is a task-model failure that fails the run (authentication,
// rate limit, connection); other rejections score the example 0.
type TaskError struct{ Err error }

func (e *TaskError) Error() string { return "task model: " + e.Err.Error() }
func (e *TaskError) Unwrap() error { return e.Err }

// ReflectionError is any reflection-model failure; it fails the run.
type ReflectionError struct{ Err error }

func (e *ReflectionError) Error() string { return "reflection model: " + e.Err.Error() }
func (e *ReflectionError) Unwrap() error { return e.Err }

// eval is one example's outcome for one candidate.
type eval struct {
	score  float64
	reply  string
	errMsg string
}

type candidate struct {
	body   string
	parent int
	evals  []eval // by search-example index
}

func (c *candidate) mean() float64 { return meanOf(c.evals) }

type run struct {
	cfg      Config
	id       Identity
	search   []Example
	holdout  []Example
	used     int
	budget   int // for the search: MaxMetricCalls minus the holdout reserve
	rng      *rand.Rand
	pool     []*candidate
	queue    []int
	logMu    sync.Mutex
	rejected map[int][]rejection
	tried    map[string]bool
}

// Optimize runs GEPA and returns the result, or a typed error saying why
// the run failed.
func Optimize(ctx context.Context, cfg Config) (*Result, error) {
	cfg.MaxMetricCalls = cmp.Or(cfg.MaxMetricCalls, DefaultMaxMetricCalls)
	if cfg.MaxMetricCalls < 0 {
		return nil, fmt.Errorf("max_metric_calls must be positive, got %d", cfg.MaxMetricCalls)
	}
	if cfg.Minibatch <= 0 {
		cfg.Minibatch = DefaultMinibatch
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.Task == nil || cfg.Reflection == nil || cfg.Scorer == nil {
		return nil, errors.New("gepa: a task model, a reflection model and a scorer are required")
	}
	exs := slices.DeleteFunc(slices.Clone(cfg.Examples), func(ex Example) bool { return len(ex.Messages) == 0 })
	if len(exs) == 0 {
		return nil, ErrNoExamples
	}
	r := &run{cfg: cfg, rng: newRNG(cfg.Seed), rejected: map[int][]rejection{}, tried: map[string]bool{}}
	r.search, r.holdout = split(exs, r.rng)
	mb := min(cfg.Minibatch, len(r.search))
	reserve := 2 * len(r.holdout)
	need := len(r.search) + mb + reserve
	if cfg.MaxMetricCalls < need {
		return nil, fmt.Errorf("%w: max_metric_calls is %d, but evaluating the seed takes %d calls (%d examples), one proposal %d more%s, so the reflection model would never be called; set max_metric_calls to at least %d",
			ErrBudget, cfg.MaxMetricCalls, len(r.search), len(r.search), mb, holdoutNote(len(r.holdout)), need)
	}
	r.budget = cfg.MaxMetricCalls - reserve
	r.logf("gepa: %d examples (%d for search, %d held out), budget %d metric calls, minibatch %d, seed %d",
		len(exs), len(r.search), len(r.holdout), cfg.MaxMetricCalls, mb, cfg.Seed)

	id, err := r.identity(ctx)
	if err != nil {
		return nil, err
	}
	r.id = id
	r.logf("skill: name %q, description %q", id.Name, id.Description)

	seed := &candidate{body: id.Description, parent: -1}
	seed.evals, err = r.evaluate(ctx, seed.body, r.search, allIdx(len(r.search)))
	if err != nil {
		return nil, err
	}
	r.pool = append(r.pool, seed)
	r.tried[norm(seed.body)] = true
	r.logf("seed: score %.4f (%d/%d calls)", seed.mean(), r.used, cfg.MaxMetricCalls)
	r.progress(0)

	res := &Result{SkillName: id.Name, SkillDescription: id.Description, MaxMetricCalls: cfg.MaxMetricCalls, PromptVersion: PromptVersion}
	stalls := 0
	for it := 1; r.used+mb <= r.budget; it++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		res.Iterations = it
		p := r.selectParent()
		ids := r.minibatch(mb)
		parent := r.pool[p]
		recs := make([]record, len(ids))
		parentSum := 0.0
		for i, k := range ids {
			e := parent.evals[k]
			recs[i] = record{ex: r.search[k], reply: e.reply, score: e.score, errMsg: e.errMsg}
			parentSum += e.score
		}
		shown := r.rejected[p]
		if len(shown) > maxRememberedRejections {
			shown = shown[len(shown)-maxRememberedRejections:]
		}
		prompt := reflectionPrompt(id, parent.body, recs, shown)
		resp, err := r.cfg.Reflection.Chat(ctx, []llm.ChatMessage{{Role: "user", Content: prompt}}, reflectionMaxTokens)
		if err != nil {
			return nil, &ReflectionError{err}
		}
		res.Proposals++
		body, reason := r.check(resp.Text, parent.body)
		if reason != "" {
			r.remember(p, body, reason)
			r.logf("iteration %d: parent %d, proposal rejected before evaluation: %s", it, p, reason)
			if stalls++; stalls >= maxStalls {
				r.logf("stopping: %d proposals in a row were rejected before evaluation", stalls)
				break
			}
			r.progress(it)
			continue
		}
		stalls = 0
		r.tried[norm(body)] = true
		evs, err := r.evaluate(ctx, body, r.search, ids)
		if err != nil {
			return nil, err
		}
		childSum := sumOf(evs)
		rep := CandidateReport{Iteration: it, Parent: p, Skill: Render(id, body), Index: -1,
			MinibatchScore: childSum / float64(len(ids)), ParentMinibatchScore: parentSum / float64(len(ids))}
		if !(childSum > parentSum) {
			reason := fmt.Sprintf("scored %.3f on its minibatch, not above the parent's %.3f", rep.MinibatchScore, rep.ParentMinibatchScore)
			r.remember(p, body, reason)
			r.logf("iteration %d: parent %d, proposal %s", it, p, reason)
			rep.MetricCalls = r.used
			r.report(rep)
			r.progress(it)
			continue
		}
		rest := slices.DeleteFunc(allIdx(len(r.search)), func(k int) bool { return slices.Contains(ids, k) })
		if r.used+len(rest) > r.budget {
			r.logf("iteration %d: proposal beat its parent on the minibatch (%.3f > %.3f) but the budget cannot evaluate it on the other %d examples; stopping",
				it, rep.MinibatchScore, rep.ParentMinibatchScore, len(rest))
			rep.MetricCalls = r.used
			r.report(rep)
			break
		}
		full := make([]eval, len(r.search))
		for i, k := range ids {
			full[k] = evs[i]
		}
		more, err := r.evaluate(ctx, body, r.search, rest)
		if err != nil {
			return nil, err
		}
		for i, k := range rest {
			full[k] = more[i]
		}
		c := &candidate{body: body, parent: p, evals: full}
		r.pool = append(r.pool, c)
		res.Accepted++
		sc := c.mean()
		rep.Index, rep.Accepted, rep.Score, rep.MetricCalls = len(r.pool)-1, true, &sc, r.used
		r.report(rep)
		r.logf("iteration %d: parent %d, accepted as candidate %d: minibatch %.3f > %.3f, score %.4f (%d/%d calls)",
			it, p, len(r.pool)-1, rep.MinibatchScore, rep.ParentMinibatchScore, sc, r.used, cfg.MaxMetricCalls)
		r.progress(it)
	}
	if res.Proposals == 0 {
		return nil, fmt.Errorf("%w: after the seed (%d calls) the budget of %d left no room for a proposal, so the reflection model was never called",
			ErrBudget, r.used, cfg.MaxMetricCalls)
	}

	best := r.bestIndex()
	for _, c := range r.pool {
		res.Candidates = append(res.Candidates, Candidate{Skill: Render(id, c.body), Score: c.mean()})
	}
	// seed_score and best_score are over every example (spec 001 "Skill
	// creation (GEPA)": the same reward model on the same examples), the
	// held-out ones included once they are scored; the held-out means stay
	// beside them as Holdout, the number the search never saw.
	res.SeedSkill, res.SeedScore = res.Candidates[0].Skill, res.Candidates[0].Score
	res.BestSkill, res.BestScore = res.Candidates[best].Skill, res.Candidates[best].Score
	if len(r.holdout) > 0 {
		h := &Holdout{Examples: len(r.holdout)}
		seedH, err := r.evaluate(ctx, seed.body, r.holdout, allIdx(len(r.holdout)))
		if err != nil {
			return nil, err
		}
		bestH := seedH
		if best != 0 {
			if bestH, err = r.evaluate(ctx, r.pool[best].body, r.holdout, allIdx(len(r.holdout))); err != nil {
				return nil, err
			}
		}
		h.SeedScore, h.BestScore = meanOf(seedH), meanOf(bestH)
		res.Holdout = h
		res.SeedScore = meanOf(append(slices.Clone(seed.evals), seedH...))
		res.BestScore = meanOf(append(slices.Clone(r.pool[best].evals), bestH...))
		r.logf("held out (%d examples): seed %.4f, best %.4f; over all %d examples: seed %.4f, best %.4f",
			h.Examples, h.SeedScore, h.BestScore, len(exs), res.SeedScore, res.BestScore)
	}
	res.MetricCalls = r.used
	r.logf("done: best candidate %d scores %.4f against the seed's %.4f; %d proposals, %d accepted, %d/%d metric calls",
		best, res.BestScore, res.SeedScore, res.Proposals, res.Accepted, r.used, cfg.MaxMetricCalls)
	return res, nil
}

// newRNG is the run's one random stream.
func newRNG(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x6765706173)) }

func holdoutNote(h int) string {
	if h == 0 {
		return ""
	}
	return fmt.Sprintf(" and the held-out check %d", 2*h)
}

// identity asks the reflection model for the skill's name and description.
func (r *run) identity(ctx context.Context) (Identity, error) {
	resp, err := r.cfg.Reflection.Chat(ctx, []llm.ChatMessage{{Role: "user", Content: identityPrompt(r.search)}}, 512)
	if err != nil {
		return Identity{}, &ReflectionError{err}
	}
	name, ok1 := extractTag(resp.Text, "name")
	desc, ok2 := extractTag(resp.Text, "description")
	if !ok1 || !ok2 {
		return Identity{}, &ReflectionError{fmt.Errorf("the skill identity answer has no <name> and <description> blocks: %.200q", resp.Text)}
	}
	id := Identity{Name: name, Description: oneLine(desc)}
	if err := id.Validate(); err != nil {
		return Identity{}, &ReflectionError{fmt.Errorf("the skill identity is invalid: %w", err)}
	}
	return id, nil
}

// check returns the proposal's body, or why it is rejected before any
// metric call is spent.
func (r *run) check(reply, parent string) (string, string) {
	body, err := extractBody(reply)
	switch {
	case err != nil:
		return "", "malformed: " + err.Error()
	case body == "":
		return "", "empty body"
	case norm(body) == norm(parent):
		return body, "identical to its parent"
	case r.tried[norm(body)]:
		return body, "already tried"
	}
	return body, ""
}

func (r *run) remember(parent int, body, reason string) {
	if body == "" {
		return
	}
	r.rejected[parent] = append(r.rejected[parent], rejection{body: body, reason: reason})
}

func norm(s string) string { return strings.TrimSpace(s) }

// split holds out a fifth of the examples by trace when there are at least
// MinHoldoutExamples; the draw uses the run's seeded stream over trace ids
// in sorted order.
func split(exs []Example, rng *rand.Rand) (search, holdout []Example) {
	if len(exs) < MinHoldoutExamples {
		return exs, nil
	}
	traces := make([]string, len(exs))
	for i, ex := range exs {
		traces[i] = ex.TraceID
	}
	slices.Sort(traces)
	traces = slices.Compact(traces)
	rng.Shuffle(len(traces), func(i, j int) { traces[i], traces[j] = traces[j], traces[i] })
	out := map[string]bool{}
	for _, t := range traces[:len(traces)/5] {
		out[t] = true
	}
	for _, ex := range exs {
		if out[ex.TraceID] {
			holdout = append(holdout, ex)
		} else {
			search = append(search, ex)
		}
	}
	return search, holdout
}

// selectParent draws a candidate with weight = the number of search
// examples on which it is best (ties within 1e-9 share), plus one for the
// best candidate by mean, so the best can always be drawn.
func (r *run) selectParent() int {
	w := make([]int, len(r.pool))
	for e := range r.search {
		top := r.pool[0].evals[e].score
		for _, c := range r.pool[1:] {
			top = max(top, c.evals[e].score)
		}
		for k, c := range r.pool {
			if c.evals[e].score >= top-1e-9 {
				w[k]++
			}
		}
	}
	w[r.bestIndex()]++
	total := 0
	for _, x := range w {
		total += x
	}
	n := r.rng.IntN(total)
	for k, x := range w {
		if n < x {
			return k
		}
		n -= x
	}
	return len(w) - 1
}

// bestIndex is the highest mean; the earlier candidate wins a tie, so a
// child must beat the seed to replace it.
func (r *run) bestIndex() int {
	best := 0
	for k, c := range r.pool {
		if c.mean() > r.pool[best].mean() {
			best = k
		}
	}
	return best
}

// minibatch returns b distinct search-example indices from an
// epoch-shuffled stream (one permutation per epoch, drawn from the run's
// seeded stream): every example is used about equally often. An index that
// would repeat within a batch (at an epoch boundary) waits for the next
// batch instead of being dropped.
func (r *run) minibatch(b int) []int {
	b = min(b, len(r.search))
	ids := make([]int, 0, b)
	for len(ids) < b {
		at := slices.IndexFunc(r.queue, func(k int) bool { return !slices.Contains(ids, k) })
		if at < 0 {
			r.queue = append(r.queue, r.rng.Perm(len(r.search))...)
			continue
		}
		ids = append(ids, r.queue[at])
		r.queue = slices.Delete(r.queue, at, at+1)
	}
	return ids
}

func (r *run) report(rep CandidateReport) {
	if r.cfg.OnCandidate != nil {
		r.cfg.OnCandidate(rep)
	}
}

func (r *run) progress(it int) {
	if r.cfg.Progress != nil {
		r.cfg.Progress(Progress{Iteration: it, MetricCalls: r.used, MaxMetricCalls: r.cfg.MaxMetricCalls, BestScore: r.pool[r.bestIndex()].mean()})
	}
}

func (r *run) logf(format string, args ...any) {
	r.logMu.Lock()
	defer r.logMu.Unlock()
	fmt.Fprintf(r.cfg.Log, format+"\n", args...)
}

func allIdx(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func sumOf(evs []eval) float64 {
	s := 0.0
	for _, e := range evs {
		s += e.score
	}
	return s
}

func meanOf(evs []eval) float64 { return sumOf(evs) / float64(len(evs)) }

// SystemMessage is the task model's system message (spec 004): the
// example's own system prompt, a blank line, then the skill block.
func SystemMessage(system *string, id Identity, body string) string {
	block := "<skill name=\"" + id.Name + "\">\n" + Render(id, body) + "\n</skill>"
	if system == nil || *system == "" {
		return block
	}
	return *system + "\n\n" + block
}

// RenderReply is the text the reward model scores: the example's input and
// the reply, rendered like training text (system excluded).
func RenderReply(version int, ex Example, reply string) string {
	steps := make([]domain.PairStep, 0, len(ex.Messages)+1)
	for _, m := range ex.Messages {
		steps = append(steps, domain.PairStep{Role: domain.Role(m.Role), Content: m.Content})
	}
	steps = append(steps, domain.PairStep{Role: domain.RoleAssistant, Content: reply})
	return domain.RenderVersion(version, steps, len(steps)-1, true)
}
