// Package evaluator holds the rules of the shared, versioned action
// evaluator (spec 002 "The shared evaluator"): which supervision may train
// or test it (per-trace consent), how a benchmark is frozen and held apart
// from training by trace group, and the release gates a candidate must pass
// against the incumbent. Everything here is pure and seeded, so replaying
// the log reproduces every benchmark, dataset and verdict exactly.
package evaluator

import (
	"cmp"
	"hash/fnv"
	"sort"
	"strings"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/comparisons"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/feedback"
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/domain/traces"
)

// Defaults of the release policy.
const (
	// DefaultMinSlice is CRITIC_EVALUATOR_MIN_SLICE: a slice with fewer
	// benchmark items is too noisy to block a release.
	DefaultMinSlice = 30
	// DefaultTolerance is how far a populated slice's accuracy may fall
	// below the incumbent's before the candidate is refused.
	DefaultTolerance = 0.02
	// BootstrapRounds and BootstrapSeed fix the paired bootstrap.
	BootstrapRounds = 2000
	BootstrapSeed   = 0
	// BenchmarkPercent of trace groups (by a fixed hash) are benchmark
	// groups: their comparisons test, never train, in every version.
	BenchmarkPercent = 30
)

// Slice dimensions (spec 002: tool, domain, agent).
const (
	SliceTool   = "tool"
	SliceDomain = "domain"
	SliceAgent  = "agent"
)

// Item is one comparison the evaluator may learn from or be tested on: a
// decided reviewed comparison of a contributing trace, with its trace group
// and slices. Chosen and Rejected are rendered as step targets are. It is
// the event's item type, so a frozen benchmark is stored exactly as built.
type Item = events.EvaluatorItem

// Group is a trace's group: metadata.group when the importer set one (so a
// multi-trace session stays on one side of the split), else the trace; it is
// scoped by owner, so two accounts never share a group.
func Group(owner string, s traces.State) string {
	if g, ok := s.Metadata["group"].(string); ok && strings.TrimSpace(g) != "" {
		return owner + "/" + strings.TrimSpace(g)
	}
	return owner + "/" + s.ID
}

// InBenchmark reports whether a trace group belongs to the benchmark side.
// The rule is a fixed hash, so a group never moves sides: later data in a
// benchmark group can enter a later benchmark version but never training.
func InBenchmark(group string) bool {
	h := fnv.New64a()
	h.Write([]byte(group))
	rng := domain.SplitMix64{State: h.Sum64()}
	return rng.Next()%100 < BenchmarkPercent
}

// Items returns a trace's usable comparisons: none unless the trace
// contributes; only decided ones (ties make no pair) on steps the trace
// still has.
func Items(s traces.State) []Item {
	if !s.Exists || !s.Contribute {
		return nil
	}
	steps := map[string]bool{}
	for _, st := range s.Steps {
		steps[st.ID] = true
	}
	group := Group(s.OwnerID, s)
	var out []Item
	for _, c := range s.Comparisons {
		if !steps[c.StepID] || c.Source == events.ComparisonFromModels {
			continue // models comparisons span two traces: ModelComparisonItems
		}
		chosen, rejected, ok := comparisons.Pair(c)
		if !ok {
			continue
		}
		prefix := Prefix(s, StepIndex(s, c.StepID)) // the evaluator's input (input.go)
		out = append(out, Item{ID: c.ComparisonID, OwnerID: s.OwnerID, TraceID: s.ID, Revision: s.Revision, Group: group,
			FindingID: c.FindingID, Chosen: prefix + chosen, Rejected: prefix + rejected, Slices: itemSlices(s, c.ToolName)})
	}
	return out
}

// itemSlices are the slices of an item whose chosen side is trace s's
// action calling tool ("" for a text response).
func itemSlices(s traces.State, tool string) map[string]string {
	domainSlice, _ := s.Metadata["domain"].(string)
	return map[string]string{SliceTool: cmp.Or(tool, "(response)"), SliceDomain: domainSlice,
		SliceAgent: domain.SourceID(s.SourceID, s.Metadata, s.SourceFormat)}
}

// Benchmark is one frozen benchmark version: its items as they were when
// it was frozen. Later data never changes it.
type Benchmark struct {
	Version int    `json:"version"`
	AsOfSeq int64  `json:"as_of_seq"`
	Items   []Item `json:"items"`
}

// SliceCounts counts a benchmark's items per dimension and value.
func SliceCounts(items []Item) map[string]map[string]int {
	out := map[string]map[string]int{SliceTool: {}, SliceDomain: {}, SliceAgent: {}}
	for _, it := range items {
		for dim, v := range it.Slices {
			if v != "" {
				out[dim][v]++
			}
		}
	}
	return out
}

// Benchmark item rules, recorded with each frozen version.
const (
	// ItemRulesReviewed: reviewed comparisons only (versions frozen before
	// verified outcomes counted).
	ItemRulesReviewed = 0
	// ItemRulesVerified: reviewed comparisons (of findings and of two
	// models' preferred actions) and verified-outcome comparisons.
	ItemRulesVerified = 1
	// CurrentItemRules is what a new version is frozen under.
	CurrentItemRules = ItemRulesVerified
)

// VerifiedItems are the verified-outcome comparisons between contributing
// traces (rewardmodels.VerifiedComparisons): a succeeded and a failed trace
// of one owner with the same prior context, both opted in. Side is the
// split the item belongs to: it is kept only when both traces' groups fall
// on the same side (benchmark or training), like cross-partition pairs in
// personal training; onBenchmark selects which side is wanted.
func VerifiedItems(states []traces.State, onBenchmark bool) []Item {
	var contributing []traces.State
	for _, s := range states {
		if s.Exists && s.Contribute {
			contributing = append(contributing, s)
		}
	}
	var out []Item
	for _, vc := range rewardmodels.VerifiedComparisons(contributing) {
		win, lose := vc.ChosenTrace, vc.RejectedTrace
		g, lg := Group(win.OwnerID, win), Group(lose.OwnerID, lose)
		if InBenchmark(g) != onBenchmark || InBenchmark(lg) != onBenchmark {
			continue
		}
		out = append(out, Item{ID: vc.ID, OwnerID: win.OwnerID, TraceID: win.ID, Revision: win.Revision, Group: g,
			Chosen: vc.ChosenText, Rejected: vc.RejectedText, Source: rewardmodels.SourceVerifiedOutcome,
			RejectedTraceID: lose.ID, RejectedRevision: lose.Revision, OutcomeFrom: []string{vc.ChosenFrom, vc.RejectedFrom},
			Slices: itemSlices(win, vc.Chosen.ToolName)})
	}
	return out
}

// ModelComparisonItems are the decided comparisons of two models' preferred
// actions (source "models"): both actions' traces must contribute, still
// have those steps, and sit on the wanted side of the split.
func ModelComparisonItems(states []traces.State, onBenchmark bool) []Item {
	byID := map[string]traces.State{}
	has := map[string]bool{}
	for _, s := range states {
		if s.Exists && s.Contribute {
			byID[s.ID] = s
			for _, st := range s.Steps {
				has[s.ID+"/"+st.ID] = true
			}
		}
	}
	var out []Item
	for _, s := range states {
		if _, ok := byID[s.ID]; !ok {
			continue
		}
		for _, c := range s.Comparisons {
			if c.Source != events.ComparisonFromModels || !has[c.Left.TraceID+"/"+c.Left.StepID] || !has[c.Right.TraceID+"/"+c.Right.StepID] {
				continue
			}
			chosen, rejected, ok := comparisons.Pair(c)
			if !ok {
				continue
			}
			win, lose := c.Left, c.Right
			if c.Choice == events.ChoiceRight {
				win, lose = lose, win
			}
			wt, lt := byID[win.TraceID], byID[lose.TraceID]
			g := Group(wt.OwnerID, wt)
			if InBenchmark(g) != onBenchmark || InBenchmark(Group(lt.OwnerID, lt)) != onBenchmark {
				continue
			}
			out = append(out, Item{ID: c.ComparisonID, OwnerID: wt.OwnerID, TraceID: wt.ID, Revision: wt.Revision, Group: g,
				Chosen: chosen, Rejected: rejected, Source: events.ComparisonFromModels, RejectedTraceID: lt.ID, RejectedRevision: lt.Revision,
				Slices: itemSlices(wt, c.ToolName)})
		}
	}
	return out
}

// Freeze builds the next benchmark version from the contributing traces as
// of a log position under the current item rules.
func Freeze(version int, asOfSeq int64, states []traces.State) Benchmark {
	return FreezeWith(CurrentItemRules, version, asOfSeq, states)
}

// FreezeWith builds a benchmark version under the given item rules: every
// usable item of a benchmark group (reviewed comparisons, and under
// ItemRulesVerified verified-outcome comparisons whose traces are both
// benchmark groups), ordered by item id so the same log always freezes the
// same benchmark.
func FreezeWith(rules, version int, asOfSeq int64, states []traces.State) Benchmark {
	b := Benchmark{Version: version, AsOfSeq: asOfSeq, Items: []Item{}}
	for _, s := range states {
		for _, it := range Items(s) {
			if InBenchmark(it.Group) {
				b.Items = append(b.Items, it)
			}
		}
	}
	if rules >= ItemRulesVerified {
		b.Items = append(b.Items, VerifiedItems(states, true)...)
		b.Items = append(b.Items, ModelComparisonItems(states, true)...)
	}
	sort.Slice(b.Items, func(i, j int) bool { return b.Items[i].ID < b.Items[j].ID })
	return b
}

// TrainingPair is a candidate's training pair with its provenance. Only
// human supervision appears here: reviewed comparisons and explicit step
// ratings. Evaluator predictions never do.
type TrainingPair struct {
	Chosen        string   `json:"chosen"`
	Rejected      string   `json:"rejected"`
	TraceID       string   `json:"trace_id"`
	OwnerID       string   `json:"owner_id"`
	Revision      int      `json:"trace_revision"`
	Source        string   `json:"source"` // reviewed_comparison, verified_outcome, explicit or correction
	ComparisonID  string   `json:"comparison_id,omitempty"`
	FindingID     string   `json:"finding_id,omitempty"`
	AnnotationIDs []string `json:"annotation_ids,omitempty"`
	// RejectedTraceID is a verified-outcome pair's failed trace (TraceID
	// the succeeded one).
	RejectedTraceID string `json:"rejected_trace_id,omitempty"`
}

// Training-pair sources.
const (
	PairReviewedComparison = "reviewed_comparison"
	PairExplicitRating     = "explicit"
	// PairCorrection: a later user correction of the agent, as feedback
	// extraction recorded it (a user_feedback finding with a verbatim quote
	// and an independently reviewed alternative).
	PairCorrection = "correction"
	// PairVerifiedOutcome: a verified-outcome comparison (counts as reviewed).
	PairVerifiedOutcome = rewardmodels.SourceVerifiedOutcome
)

// Corrections are recorded findings by trace id (finding_recorded events of
// any reward model), for CandidateDataset.
type Corrections map[string][]events.RewardModelFindingRecordedV1

// CandidateDataset is what a candidate trains on: the contributed
// supervision of training-side groups only — reviewed comparisons, explicit
// step ratings and user corrections of traces that contribute now — in a
// fixed order. A trace that opted out contributes nothing, whatever it did
// before; AI judgments and evaluator predictions never appear.
func CandidateDataset(states []traces.State, corrections Corrections) []TrainingPair {
	out := []TrainingPair{}
	for _, s := range states {
		if !s.Exists || !s.Contribute || InBenchmark(Group(s.OwnerID, s)) {
			continue
		}
		for _, it := range Items(s) {
			out = append(out, TrainingPair{Chosen: it.Chosen, Rejected: it.Rejected, TraceID: s.ID, OwnerID: s.OwnerID, Revision: s.Revision,
				Source: PairReviewedComparison, ComparisonID: it.ID, FindingID: it.FindingID})
		}
		// Thinking steps are not marked: the evaluator's pairs are built as
		// they were before thinking was excluded.
		pt := rewardmodels.PairTraceFor(s, events.TrainingConfig{})
		var ratings []domain.Rating
		for _, a := range s.AnnotationsInOrder() {
			if a.Rating != nil && a.StepID != "" {
				ratings = append(ratings, domain.Rating{AnnotationID: a.ID, TraceID: s.ID, StepID: a.StepID, Rating: *a.Rating, LabelError: a.LabelError})
			}
		}
		// A rating pair may compare two steps: both sides get the trace's
		// system instructions and evaluation context.
		prefix := Prefix(s, len(s.Steps))
		for _, p := range domain.BuildPairs([]domain.PairTrace{pt}, ratings, domain.DefaultMaxPairs) {
			out = append(out, TrainingPair{Chosen: prefix + p.Chosen, Rejected: prefix + p.Rejected, TraceID: s.ID, OwnerID: s.OwnerID, Revision: s.Revision,
				Source: PairExplicitRating, AnnotationIDs: p.AnnotationIDs})
		}
		out = append(out, correctionPairs(s, corrections[s.ID])...)
	}
	for _, it := range ModelComparisonItems(states, false) {
		out = append(out, TrainingPair{Chosen: it.Chosen, Rejected: it.Rejected, TraceID: it.TraceID, OwnerID: it.OwnerID, Revision: it.Revision,
			Source: PairReviewedComparison, ComparisonID: it.ID, RejectedTraceID: it.RejectedTraceID})
	}
	// Verified outcomes between training-side traces that both contribute.
	for _, it := range VerifiedItems(states, false) {
		out = append(out, TrainingPair{Chosen: it.Chosen, Rejected: it.Rejected, TraceID: it.TraceID, OwnerID: it.OwnerID, Revision: it.Revision,
			Source: PairVerifiedOutcome, ComparisonID: it.ID, RejectedTraceID: it.RejectedTraceID})
	}
	return out
}

// correctionPairs are a trace's user corrections that still describe its
// current revision's actions, once per finding id (a finding reused by a
// later attempt or model is one correction), in recording order.
func correctionPairs(s traces.State, recs []events.RewardModelFindingRecordedV1) []TrainingPair {
	if len(recs) == 0 {
		return nil
	}
	targets := map[string]feedback.Target{}
	for _, t := range feedback.Targets(rewardmodels.FeedbackTrace(s)) {
		targets[t.StepID] = t
	}
	seen := map[string]bool{}
	var out []TrainingPair
	for _, r := range recs {
		f := r.Finding
		if seen[f.ID] || r.TraceRevision != s.Revision || f.Source != events.FindingUserFeedback || f.Outcome != events.OutcomePair || f.AlternativeAction == nil {
			continue
		}
		t, ok := targets[f.StepID]
		if !ok || t.Action != f.OriginalAction {
			continue
		}
		seen[f.ID] = true
		chosen, rejected := feedback.Pair(t, f)
		prefix := Prefix(s, StepIndex(s, f.StepID))
		out = append(out, TrainingPair{Chosen: prefix + chosen, Rejected: prefix + rejected, TraceID: s.ID, OwnerID: s.OwnerID, Revision: s.Revision,
			Source: PairCorrection, FindingID: f.ID})
	}
	return out
}
