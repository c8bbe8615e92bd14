// Package extract runs feedback extraction in the worker tier (spec 001
// "Personal reward model training", DESIGN §9): for every assistant action
// of the selected traces it asks the feedback model to classify the human
// feedback the action may be judged on, asks for an AI judgment where no
// human feedback settled it (and no explicit rating did), and sends every
// comparison to an independent review. The rules — targets, evidence,
// checks, rubric dropout, pairs — are domain/feedback's; this package only
// makes the calls, at most PerTrace at once per trace and the llm client's
// global cap overall, and reports each trace's findings as it completes.
package extract

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/feedback"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/platform/llm"
)

// Schemas of the three calls.
var (
	FeedbackSchema = llm.Object(map[string]*llm.Schema{
		"label":          llm.Enum("the human's verdict on this action", "positive", "negative", "unclear"),
		"confidence":     llm.Enum("high only when the feedback clearly refers to this action", "high", "low"),
		"about":          llm.Enum("what the feedback reacts to", "agent", "task", "none"),
		"evidence_id":    llm.NullableString("id of the evidence item cited"),
		"evidence_quote": llm.NullableString("excerpt copied verbatim from that evidence item"),
		"alternative":    llm.NullableString("the corrected (negative) or weaker (positive) action; JSON for a tool call; null when there is no basis"),
		"reason":         llm.String("one or two sentences"),
	})
	JudgmentSchema = llm.Object(map[string]*llm.Schema{
		"label":       llm.Enum("the verdict on the criteria", "positive", "negative", "unclear"),
		"confidence":  llm.Enum("high only when the verdict is clear from the context", "high", "low"),
		"alternative": llm.NullableString("an improved (negative) or weaker (positive) action; JSON for a tool call; null when none"),
		"reason":      llm.String("one or two sentences naming the deciding criteria"),
	})
	ReviewSchema = llm.Object(map[string]*llm.Schema{
		"preferred": llm.Enum("the better candidate", "A", "B", "tie"),
		"grounded":  llm.Bool("the preferred candidate is supported by the context and safe"),
		"reason":    llm.String("one or two sentences"),
	})
)

// Reporter is where findings go: the worker service in production.
type Reporter interface {
	// Record stores one trace's findings.
	Record(ctx context.Context, rec events.RewardModelFeedbackExtractedV1) error
	// Progress renews the lease and reports targets done (of the attempt).
	Progress(ctx context.Context, done int) error
}

// Extractor makes the calls.
type Extractor struct {
	LLM *llm.Client
	// PerTrace bounds concurrent calls per trace (default 3, spec 001).
	PerTrace int
	// ProgressEvery throttles progress reports (default 2 s).
	ProgressEvery time.Duration
}

func (x *Extractor) perTrace() int {
	if x.PerTrace <= 0 {
		return 3
	}
	return x.PerTrace
}

// Run extracts every trace of in, reporting each trace's record as it
// completes, and stops starting targets once in.PairsNeeded pairs were
// found. done0 is the targets already done (reused) for progress. The first
// failed call (after the client's retries) stops the run and is returned:
// malformed extraction fails the job, and what was recorded stays.
func (x *Extractor) Run(ctx context.Context, in jobs.ExtractionInputs, rep Reporter, done0 int) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var pairs, done atomic.Int64
	done.Store(int64(done0))
	needed := int64(in.PairsNeeded)

	var repMu sync.Mutex // one report at a time: each appends at the model's version
	stopProgress := make(chan struct{})
	progressDone := make(chan struct{})
	go func() {
		defer close(progressDone)
		every := x.ProgressEvery
		if every <= 0 {
			every = 2 * time.Second
		}
		t := time.NewTicker(every)
		defer t.Stop()
		// Every tick reports, changed or not: it also renews the lease
		// while a slow provider makes a target take longer than one.
		for {
			select {
			case <-stopProgress:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			repMu.Lock()
			err := rep.Progress(ctx, int(done.Load()))
			repMu.Unlock()
			if err != nil {
				cancel(fmt.Errorf("reporting progress: %w", err))
				return
			}
		}
	}()

	traces := make(chan feedback.Trace)
	// Twice as many traces as the global cap needs keeps it saturated while
	// traces start and finish (a trace's last targets leave its per-trace
	// slots idle); the llm client's cap still bounds calls in flight.
	parallel := 2*((x.LLM.Limit()+x.perTrace()-1)/x.perTrace()) + 1
	var wg sync.WaitGroup
	for range parallel {
		wg.Go(func() {
			for tr := range traces {
				if pairs.Load() >= needed || ctx.Err() != nil {
					continue // max_pairs reached (or stopping): the trace is not assessed
				}
				rec, err := x.trace(ctx, in, tr, &pairs, needed, &done)
				if err != nil {
					cancel(err)
					continue
				}
				if rec == nil {
					continue
				}
				repMu.Lock()
				err = rep.Record(ctx, *rec)
				repMu.Unlock()
				if err != nil {
					cancel(fmt.Errorf("reporting the findings of trace %s: %w", tr.ID, err))
				}
			}
		})
	}
feed:
	for _, tr := range in.Traces {
		select {
		case traces <- tr:
		case <-ctx.Done():
			break feed
		}
	}
	close(traces)
	wg.Wait()
	close(stopProgress)
	<-progressDone
	if err := context.Cause(ctx); err != nil {
		return err
	}
	repMu.Lock()
	defer repMu.Unlock()
	return rep.Progress(ctx, int(done.Load()))
}

// trace assesses one trace's targets, PerTrace at a time; nil when max_pairs
// was reached before any of them started.
func (x *Extractor) trace(ctx context.Context, in jobs.ExtractionInputs, tr feedback.Trace, pairs *atomic.Int64, needed int64, done *atomic.Int64) (*events.RewardModelFeedbackExtractedV1, error) {
	targets := feedback.Targets(tr)
	results := make([][]events.Finding, len(targets))
	usages := make([]llm.Usage, len(targets))
	stopped := len(targets) // the first target not started (max_pairs reached)
	sem := make(chan struct{}, x.perTrace())
	var wg sync.WaitGroup
	var firstErr error
	var errOnce sync.Once
	for i, t := range targets {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait() // the calls in flight end with ctx
			return nil, context.Cause(ctx)
		}
		if pairs.Load() >= needed {
			<-sem
			stopped = i
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			fs, u, err := x.Assess(ctx, t, in.Criteria, in.ConfigHash, in.ClassifierModel, in.RubricDropout)
			usages[i] = u
			if err != nil {
				errOnce.Do(func() {
					firstErr = fmt.Errorf("trace %s step %d: %w", t.TraceID, t.StepIndex, err)
				})
				return
			}
			results[i] = fs
			for _, f := range fs {
				if f.Outcome == events.OutcomePair {
					pairs.Add(1)
				}
			}
			done.Add(1)
		})
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if stopped == 0 && len(targets) > 0 {
		return nil, nil
	}
	rec := &events.RewardModelFeedbackExtractedV1{ModelID: in.ModelID, Attempt: in.Attempt, TraceID: tr.ID, TraceRevision: tr.Revision,
		ClassifierModel: in.ClassifierModel, PromptVersion: feedback.PromptVersion, ConfigHash: in.ConfigHash, Targets: len(targets),
		Findings: []events.Finding{}, Partial: stopped < len(targets)}
	var total llm.Usage // the targets not started made no call
	for i := range stopped {
		total.Add(usages[i])
		rec.Findings = append(rec.Findings, results[i]...)
	}
	rec.Usage = []events.LLMUsage{*findingUsage(in.ClassifierModel, total)}
	return rec, nil
}

// Assess makes one target's calls: the feedback classification when the
// target has human evidence, an AI judgment unless that feedback settled it
// or an explicit rating covers the step, and a review for each comparison.
// A failed classification or judgment is an error; a failed review is
// recorded as one (OutcomeReviewFailed).
func (x *Extractor) Assess(ctx context.Context, t feedback.Target, criteria []string, configHash, model string, dropout bool) ([]events.Finding, llm.Usage, error) {
	var out []events.Finding
	var usage llm.Usage
	decisive := false
	ctxMsg := feedback.ContextMessage(t)
	if len(t.Evidence) > 0 {
		f, dec, u, err := x.Classify(ctx, t, criteria, configHash, model)
		usage.Add(u)
		if err != nil {
			return nil, usage, err
		}
		decisive = dec
		f.Usage = findingUsage(model, u)
		out = append(out, f)
	}
	if !decisive && !t.Rated {
		cs := feedback.SampleCriteria(criteria, t.TraceID, t.StepID, dropout)
		var a feedback.JudgmentAnswer
		u, err := x.call(ctx, llm.Request{Name: "judgment", Instructions: feedback.JudgmentInstructions, Context: ctxMsg,
			Input: feedback.JudgmentInput(t, cs), Schema: JudgmentSchema, MaxTokens: 2048}, &a)
		usage.Add(u)
		if err != nil {
			return nil, usage, err
		}
		f, review := feedback.FromJudgment(t, a, cs, model, configHash)
		if review {
			ru := x.review(ctx, t, &f, cs)
			usage.Add(ru)
			u.Add(ru)
		}
		f.Usage = findingUsage(model, u)
		out = append(out, f)
	}
	return out, usage, nil
}

// Classify makes the human-feedback call for a target with evidence (and
// the review of its comparison); decisive is FromFeedback's.
func (x *Extractor) Classify(ctx context.Context, t feedback.Target, criteria []string, configHash, model string) (events.Finding, bool, llm.Usage, error) {
	var a feedback.FeedbackAnswer
	usage, err := x.call(ctx, llm.Request{Name: "feedback", Instructions: feedback.FeedbackInstructions, Context: feedback.ContextMessage(t),
		Input: feedback.FeedbackInput(t), Schema: FeedbackSchema, MaxTokens: 2048}, &a)
	if err != nil {
		return events.Finding{}, false, usage, err
	}
	f, review, decisive := feedback.FromFeedback(t, a, model, configHash)
	if review {
		usage.Add(x.review(ctx, t, &f, criteria))
	}
	return f, decisive, usage, nil
}

// review asks the independent review: only the prior context, the two
// candidates in a seeded order, and the same criteria as the judgment (all
// criteria for human feedback, whose attribution is never dropped).
func (x *Extractor) review(ctx context.Context, t feedback.Target, f *events.Finding, criteria []string) llm.Usage {
	var a feedback.ReviewAnswer
	alt := *f.AlternativeAction
	u, err := x.call(ctx, llm.Request{Name: "review", Instructions: feedback.ReviewInstructions, Context: feedback.ContextMessage(t),
		Input: feedback.ReviewInput(t, alt, criteria), Schema: ReviewSchema, MaxTokens: 1024}, &a)
	if err != nil {
		feedback.ReviewFailed(f, err.Error())
		return u
	}
	feedback.ApplyReview(f, t, a)
	return u
}

func findingUsage(model string, u llm.Usage) *events.LLMUsage {
	return &events.LLMUsage{Model: model, Calls: u.Calls, InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CachedTokens: u.CachedTokens}
}

func (x *Extractor) call(ctx context.Context, req llm.Request, into any) (llm.Usage, error) {
	res, err := x.LLM.Call(ctx, req)
	if err != nil {
		return res.Usage, err
	}
	if err := json.Unmarshal(res.JSON, into); err != nil {
		return res.Usage, errors.New("decoding a validated answer: " + err.Error())
	}
	return res.Usage, nil
}
