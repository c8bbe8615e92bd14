// Package label is the step labeler (spec 001 "Step labels", automatic
// annotation): it cuts a trace into chunks, plans bounded, overlapping
// context windows (labels.Windows), and asks the step-label model for each
// chunk that has no label yet — one call per chunk, the window's context
// sent as a stable prompt prefix so providers' prompt caches hit — then
// validates every answer against the label schema and the trace before it
// is reported. It holds no state and no credentials beyond its model
// client; the worker (gpuworker/worker) feeds it jobs and reports what it
// returns through the API's worker service.
package label

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/labels"
	"github.com/criticml/critic/platform/llm"
)

// Labeler labels chunks with one model.
type Labeler struct {
	client *llm.Client
	limits labels.Limits
	// batch is how many labels are reported together (progress granularity).
	batch int
}

// New returns a labeler over client within lim (labels.DefaultLimits when
// zero). The client's concurrency cap bounds the calls in flight.
func New(client *llm.Client, lim labels.Limits) *Labeler {
	if lim.MaxChunks <= 0 {
		lim = labels.DefaultLimits
	}
	return &Labeler{client: client, limits: lim, batch: 10}
}

// Model is the LiteLLM string of the labeling model, recorded with labels.
func (l *Labeler) Model() string { return l.client.Model().String() }

// Result is one labeling run.
type Result struct {
	// Targets is how many chunks needed a label; Labeled how many got one.
	Targets, Labeled int
	// Failed are the chunks that got no label, with the last error.
	Failed []string
	Err    error
	Usage  llm.Usage
}

// Report receives labels as they are made, in batches, with the usage of
// the calls that made them. An error stops the run (the trace changed, the
// API refused): labels already reported stay recorded.
type Report func(ctx context.Context, batch []labels.Label, usage llm.Usage) error

// Label labels every complete chunk of steps whose id is not in have,
// reporting them through report as they arrive. It returns when every
// target was tried (or report failed, or ctx ended).
func (l *Labeler) Label(ctx context.Context, steps []domain.Step, have map[string]bool, report Report) (Result, error) {
	chunks := labels.Chunks(steps)
	var targets []int
	for i, c := range chunks {
		if c.Complete && !have[c.ID] {
			targets = append(targets, i)
		}
	}
	res := Result{Targets: len(targets)}
	if len(targets) == 0 {
		return res, nil
	}
	known := make(map[string]labels.Actor, len(chunks))
	for _, c := range chunks {
		known[c.ID] = c.Actor
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		mu      sync.Mutex
		pending []labels.Label
		pendU   llm.Usage
		failed  []string
		lastErr error
	)
	flush := func(force bool) error {
		// mu held
		if len(pending) == 0 || (!force && len(pending) < l.batch) {
			return nil
		}
		batch, u := pending, pendU
		pending, pendU = nil, llm.Usage{}
		sort.Slice(batch, func(i, j int) bool { return batch[i].ChunkID < batch[j].ChunkID })
		return report(ctx, batch, u)
	}
	EachInWindow(ctx, l.client.Limit(), steps, chunks, targets, l.limits, func(t int, prefix string) {
		lab, u, err := l.one(ctx, steps, chunks, t, prefix, known)
		mu.Lock()
		defer mu.Unlock()
		res.Usage.Add(u)
		pendU.Add(u)
		if err != nil {
			failed = append(failed, chunks[t].ID)
			lastErr = err
			return
		}
		res.Labeled++
		pending = append(pending, lab)
		if rerr := flush(false); rerr != nil {
			cancel(rerr)
		}
	})
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return res, cause
	}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	if err := flush(true); err != nil {
		return res, err
	}
	sort.Strings(failed)
	res.Failed, res.Err = failed, lastErr
	return res, nil
}

// EachInWindow calls ask for every target chunk with the rendered context
// of its window (labels.Windows, labels.RenderWindow), at most limit calls
// at a time (at least one), and returns when every call has returned. The
// targets not started when ctx ends are skipped. The grader
// (gpuworker/grade) asks its questions over the same windows.
func EachInWindow(ctx context.Context, limit int, steps []domain.Step, chunks []labels.Chunk, targets []int, lim labels.Limits, ask func(target int, prefix string)) {
	type job struct {
		target int
		prefix string
	}
	var work []job
	for _, w := range labels.Windows(steps, chunks, targets, lim) {
		prefix := labels.RenderWindow(steps, chunks, w, lim)
		for _, t := range w.Targets {
			work = append(work, job{t, prefix})
		}
	}
	var wg sync.WaitGroup
	slots := make(chan struct{}, max(1, limit))
	for _, j := range work {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-slots }()
			ask(j.target, j.prefix)
		})
	}
	wg.Wait()
}

// one labels chunks[t]: the window's context as the cached prefix, the
// target named last, the answer bound to the actor's schema and checked
// against the trace (its chunk id, its references). An answer that passes
// the schema but names the wrong chunk or an unknown reference is asked
// for once more.
func (l *Labeler) one(ctx context.Context, steps []domain.Step, chunks []labels.Chunk, t int, prefix string, known map[string]labels.Actor) (labels.Label, llm.Usage, error) {
	c := chunks[t]
	earlier := make(map[string]bool, t)
	for _, e := range chunks[:t] {
		earlier[e.ID] = true
	}
	var usage llm.Usage
	var lastErr error
	for range 2 {
		resp, err := l.client.Call(ctx, llm.Request{Name: "step_label", Instructions: labels.Instructions(), Context: prefix,
			Input: labels.TargetPrompt(c), Schema: schemaFor(c.Actor), MaxTokens: 600})
		usage.Add(resp.Usage)
		if err != nil {
			return labels.Label{}, usage, err
		}
		lab, err := labels.Parse(resp.JSON)
		if err == nil && lab.ChunkID != c.ID {
			err = fmt.Errorf("the answer labels chunk %q, not the target %q", lab.ChunkID, c.ID)
		}
		if err == nil {
			err = labels.Validate(lab, known, earlier)
		}
		if err == nil && !quoted(steps, c, lab.Evidence) {
			err = fmt.Errorf("evidence %q is not a quote of the chunk", truncate(lab.Evidence, 80))
		}
		if err == nil {
			return lab, usage, nil
		}
		lastErr = fmt.Errorf("%s: chunk %s: the label does not validate: %w", l.Model(), c.ID, err)
	}
	return labels.Label{}, usage, lastErr
}

// schemas are the actors' label schemas (labels.Schema) in the provider
// layer's form, which sends them strict and validates answers on receipt.
var schemas = sync.OnceValue(func() map[labels.Actor]*llm.Schema {
	out := map[labels.Actor]*llm.Schema{}
	for _, actor := range []labels.Actor{labels.ActorUser, labels.ActorAgent} {
		s, err := convert(labels.Schema(actor))
		if err != nil {
			panic("label schema: " + err.Error()) // a fixed schema: a test catches it
		}
		out[actor] = s
	}
	return out
})

func schemaFor(a labels.Actor) *llm.Schema { return schemas()[a] }

// convert turns the JSON schema of domain/labels into an llm.Schema.
func convert(m map[string]any) (*llm.Schema, error) {
	s := &llm.Schema{}
	s.Description, _ = m["description"].(string)
	switch t := m["type"].(type) {
	case string:
		s.Type = t
	case []any:
		for _, x := range t {
			if x == "null" {
				s.Nullable = true
			} else if str, ok := x.(string); ok {
				s.Type = str
			}
		}
	default:
		return nil, fmt.Errorf("unsupported type %v", m["type"])
	}
	if c, ok := m["const"].(string); ok {
		s.Enum = []string{c}
	}
	if e, ok := m["enum"].([]any); ok {
		for _, x := range e {
			s.Enum = append(s.Enum, fmt.Sprint(x))
		}
	}
	switch n := m["maxLength"].(type) {
	case int:
		s.MaxLength = n
	case float64:
		s.MaxLength = int(n)
	}
	if props, ok := m["properties"].(map[string]any); ok {
		s.Properties = map[string]*llm.Schema{}
		for k, v := range props {
			pm, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("property %s is not a schema", k)
			}
			p, err := convert(pm)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			s.Properties[k] = p
		}
	}
	return s, nil
}

// quoted reports whether evidence is empty or occurs in the chunk's text
// (content, tool name, tool input), ignoring case and runs of whitespace:
// a label's evidence is checked against the source by code, never taken on
// the model's word.
func quoted(steps []domain.Step, c labels.Chunk, evidence string) bool {
	ev := normalize(evidence)
	if ev == "" {
		return true
	}
	var b strings.Builder
	for _, i := range c.Steps {
		s := steps[i]
		in, _ := json.Marshal(s.ToolInput)
		// As RenderWindow shows it, so a quote of the rendering counts too.
		b.WriteString("[tool call] " + s.ToolName + " " + string(in) + "\n[tool result]\n" + s.Content + "\n")
	}
	return strings.Contains(normalize(b.String()), ev)
}

func normalize(s string) string { return strings.ToLower(strings.Join(strings.Fields(s), " ")) }

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
