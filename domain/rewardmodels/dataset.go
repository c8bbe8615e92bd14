package rewardmodels

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/agreement"
	"github.com/criticml/critic/domain/comparisons"
	"github.com/criticml/critic/domain/criteria"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/feedback"
	"github.com/criticml/critic/domain/traces"
)

// DatasetPair is a training pair with its provenance: the annotations summed
// into its targets and the revisions of the traces they were made on.
type DatasetPair struct {
	Chosen         string         `json:"chosen"`
	Rejected       string         `json:"rejected"`
	TraceIDs       []string       `json:"trace_ids"`
	Granularity    string         `json:"granularity"`
	ActionType     *string        `json:"action_type"`
	AnnotationIDs  []string       `json:"annotation_ids"`
	TraceRevisions map[string]int `json:"trace_revisions"`
	// Source is rating (absent), user_feedback or ai_judgment.
	Source string `json:"source,omitempty"`
	// ComparisonIDs are the reviewed comparisons a pair came from (Source
	// "reviewed_comparison"; FindingIDs then names the finding that
	// proposed the alternative).
	ComparisonIDs []string `json:"comparison_ids,omitempty"`
	// Verified is a verified-outcome pair's provenance (Source
	// "verified_outcome"): TraceIDs are the succeeded then the failed trace.
	Verified *VerifiedProvenance `json:"verified,omitempty"`
	// FindingIDs and Evidence are a feedback pair's provenance: the
	// finding behind it and the verbatim evidence it cites.
	FindingIDs []string       `json:"finding_ids,omitempty"`
	Evidence   []PairEvidence `json:"evidence,omitempty"`
	// ChosenCredit, RejectedCredit and CreditMethod are an automatic pair's
	// provenance (Source "automatic"): the two sides' credits and how they
	// were computed (probability_weighted_v1: expected credit of a
	// classifier distribution; step_scores_v1: the labels' step score).
	ChosenCredit   *float64 `json:"chosen_credit,omitempty"`
	RejectedCredit *float64 `json:"rejected_credit,omitempty"`
	CreditMethod   string   `json:"credit_method,omitempty"`
}

// PairEvidence is a cited source and its verbatim quote.
type PairEvidence struct {
	ID    string `json:"id"`
	Quote string `json:"quote"`
}

// ScoreItem is a trace to score after training.
type ScoreItem struct {
	TraceID  string `json:"trace_id"`
	Revision int    `json:"revision"`
	Text     string `json:"text"`
}

// ActionItem is an agent action to score: the context up to and including
// the action, ending before any later tool result or user message.
type ActionItem struct {
	TraceID  string `json:"trace_id"`
	StepID   string `json:"step_id"`
	Revision int    `json:"revision"`
	Text     string `json:"text"`
}

// Dataset is everything a training attempt reads, stored as one blob.
type Dataset struct {
	ModelID          string        `json:"model_id"`
	Attempt          int           `json:"attempt"`
	AsOfSeq          int64         `json:"as_of_seq"`
	Pairs            []DatasetPair `json:"pairs"`
	SourceTraces     int           `json:"source_traces"`
	ScoreItems       []ScoreItem   `json:"score_items"`
	ActionScoreItems []ActionItem  `json:"action_score_items"`
	// InputVersion 3 renders labelled context sections for a 4,096-token
	// window (absent: version 1, 1,024 tokens).
	InputVersion int `json:"input_version,omitempty"`
	MaxLength    int `json:"max_length,omitempty"`
}

// PairTrace converts a trace's state into what pair construction reads,
// thinking steps marked (not rated targets, not scored actions).
func PairTrace(s traces.State) domain.PairTrace {
	return pairTrace(s, true)
}

// PairTraceFor is PairTrace under a model's rules: a model requested before
// thinking was excluded (cfg.ThinkingExcluded false) sees thinking steps as
// the assistant steps they were then, so its dataset rebuilds byte for byte
// as it was built and stored.
func PairTraceFor(s traces.State, cfg events.TrainingConfig) domain.PairTrace {
	return pairTrace(s, cfg.ThinkingExcluded)
}

func pairTrace(s traces.State, markThinking bool) domain.PairTrace {
	pt := domain.PairTrace{ID: s.ID, Steps: make([]domain.PairStep, len(s.Steps))}
	for i, st := range s.Steps {
		pt.Steps[i] = domain.PairStep{ID: st.ID, Role: st.Role, Content: st.Content, ToolName: st.ToolName, ToolInput: st.ToolInput,
			Thinking: markThinking && domain.IsThinking(st.Metadata)}
	}
	return pt
}

// Ratings lists a trace's rating annotations in id order, then its
// adjudicated ratings (which supersede the members' on their targets in
// domain.BuildPairs; their provenance id is the adjudication's).
func Ratings(s traces.State) []domain.Rating {
	var out []domain.Rating
	for _, a := range s.AnnotationsInOrder() {
		if a.Rating != nil {
			out = append(out, domain.Rating{AnnotationID: a.ID, TraceID: s.ID, StepID: a.StepID, Rating: *a.Rating, LabelError: a.LabelError})
		}
	}
	for _, adj := range adjudications(s, "") {
		out = append(out, domain.Rating{AnnotationID: adj.AdjudicationID, TraceID: s.ID, StepID: adj.StepID, Rating: adj.Rating, Adjudicated: true})
	}
	return out
}

// adjudications are a trace's adjudications of criterion criterionID ("":
// of ratings), in key order.
func adjudications(s traces.State, criterionID string) []events.AnnotationAdjudicatedV1 {
	var out []events.AnnotationAdjudicatedV1
	for _, k := range slices.Sorted(maps.Keys(s.Adjudications)) {
		if adj := s.Adjudications[k]; adj.CriterionID == criterionID {
			out = append(out, adj)
		}
	}
	return out
}

// withoutDisputed drops the member ratings of a trace's disputed targets
// (agreement.Disputed over the members' live, unflagged ratings or
// values: two or more members, not all the same) that have no
// adjudication: training_config.exclude_disputed. An adjudicated target
// keeps its adjudication, which supersedes the members anyway.
func withoutDisputed(s traces.State, ratings []domain.Rating) []domain.Rating {
	member := map[string]string{}
	for _, a := range s.Annotations {
		member[a.ID] = a.AuthorID
	}
	var js []agreement.Judgment
	adjudicated := map[string]bool{}
	for _, r := range ratings {
		if r.Adjudicated {
			adjudicated[r.StepID] = true
		} else if !r.LabelError {
			js = append(js, agreement.Judgment{Target: r.StepID, Member: member[r.AnnotationID], Value: float64(r.Rating)})
		}
	}
	disputed := map[string]bool{}
	for _, d := range agreement.Disputed(js) {
		disputed[d.Target] = !adjudicated[d.Target]
	}
	out := ratings[:0:0]
	for _, r := range ratings {
		if r.Adjudicated || !disputed[r.StepID] {
			out = append(out, r)
		}
	}
	return out
}

// CriterionRatings lists a trace's values of criterion c, in id order, as
// the weighted ratings pair construction sums (criteria.Criterion.Weight):
// what a model trained on c (training_config.criterion) learns from
// instead of ratings. A value c does not know counts for nothing.
func CriterionRatings(s traces.State, c *criteria.Criterion) []domain.Rating {
	var out []domain.Rating
	for _, a := range s.AnnotationsInOrder() {
		if a.CriterionID != c.ID {
			continue
		}
		if w, ok := c.Weight(a.Value); ok {
			out = append(out, domain.Rating{AnnotationID: a.ID, TraceID: s.ID, StepID: a.StepID, Rating: w, LabelError: a.LabelError, Weighted: true})
		}
	}
	for _, adj := range adjudications(s, c.ID) {
		if w, ok := c.Weight(adj.Value); ok {
			out = append(out, domain.Rating{AnnotationID: adj.AdjudicationID, TraceID: s.ID, StepID: adj.StepID, Rating: w, Weighted: true, Adjudicated: true})
		}
	}
	return out
}

// DatasetInputs is everything a dataset is built from.
type DatasetInputs struct {
	ModelID       string
	Attempt       int
	AsOfSeq       int64
	Selected, All []traces.State
	MaxPairs      int
	Config        events.TrainingConfig
	// Extracted are the attempt's feedback records (none when it did not
	// extract); Unavailable is why it did not, when a provider was missing.
	Extracted   []events.RewardModelFeedbackExtractedV1
	Unavailable string
	// Criterion is Config.Criterion's definition as of AsOfSeq (nil when
	// the model trains on ratings): its values replace the ratings.
	Criterion *criteria.Criterion
}

// BuildDatasetFrom builds an attempt's dataset: explicit-rating pairs first
// (they take precedence), then the pairs of accepted findings in selection
// and step order, capped at max_pairs together.
func BuildDatasetFrom(in DatasetInputs) (Dataset, error) {
	modelID, attempt, asOfSeq, selected, all, maxPairs := in.ModelID, in.Attempt, in.AsOfSeq, in.Selected, in.All, in.MaxPairs
	if in.Config.AnnotationSource == events.SourceExplicit {
		in.Extracted = nil
	}
	if maxPairs <= 0 {
		maxPairs = domain.DefaultMaxPairs
	}
	ds := Dataset{ModelID: modelID, Attempt: attempt, AsOfSeq: asOfSeq, Pairs: []DatasetPair{}, ScoreItems: []ScoreItem{}, ActionScoreItems: []ActionItem{}}
	if in.Config.InputVersion == 3 {
		ds.InputVersion, ds.MaxLength = 3, InputV3MaxLength
	}
	var pts []domain.PairTrace
	var ratings []domain.Rating
	revision := map[string]int{}
	for _, s := range selected {
		pts = append(pts, PairTraceFor(s, in.Config))
		rs := in.ratingsOf(s)
		if in.Config.ExcludeDisputed {
			rs = withoutDisputed(s, rs)
		}
		ratings = append(ratings, rs...)
		revision[s.ID] = s.Revision
	}
	sources := map[string]bool{}
	if in.Config.AnnotationSource == events.SourceAutomatic {
		// The automatic annotation alone: no ratings, no findings.
		ratings, in.Extracted = nil, nil
		for _, p := range automaticPairs(selected, maxPairs, in.Config) {
			ds.Pairs = append(ds.Pairs, p)
			for _, id := range p.TraceIDs {
				sources[id] = true
			}
		}
	}
	for _, p := range domain.BuildPairsRendered(pts, ratings, maxPairs, in.Config.InputVersion) {
		dp := DatasetPair{Chosen: p.Chosen, Rejected: p.Rejected, TraceIDs: p.TraceIDs, Granularity: p.Granularity,
			AnnotationIDs: p.AnnotationIDs, TraceRevisions: map[string]int{}}
		if p.ActionType != "" {
			dp.ActionType = new(p.ActionType)
		}
		for _, id := range p.TraceIDs {
			dp.TraceRevisions[id] = revision[id]
			sources[id] = true
		}
		ds.Pairs = append(ds.Pairs, dp)
	}
	for _, fp := range findingPairs(selected, ratings, in.Extracted, in.Config.InputVersion) {
		if len(ds.Pairs) >= maxPairs {
			break
		}
		ds.Pairs = append(ds.Pairs, fp)
		sources[fp.TraceIDs[0]] = true
	}
	if in.Config.AnnotationSource != events.SourceExplicit {
		for _, cp := range ComparisonPairs(selected, in.Config.InputVersion) {
			if len(ds.Pairs) >= maxPairs {
				break
			}
			ds.Pairs = append(ds.Pairs, cp)
			sources[cp.TraceIDs[0]] = true
		}
		// Verified outcomes count as reviewed comparisons.
		for _, vp := range VerifiedPairs(selected, in.Config.InputVersion) {
			if len(ds.Pairs) >= maxPairs {
				break
			}
			ds.Pairs = append(ds.Pairs, vp)
			for _, id := range vp.TraceIDs {
				sources[id] = true
			}
		}
	}
	ds.SourceTraces = len(sources)
	if len(ds.Pairs) < 2 || ds.SourceTraces < 2 {
		return ds, tooFew(ds, selected, in)
	}
	for _, s := range all {
		pt := PairTraceFor(s, in.Config)
		ds.ScoreItems = append(ds.ScoreItems, ScoreItem{TraceID: s.ID, Revision: s.Revision, Text: domain.RenderVersion(in.Config.InputVersion, pt.Steps, len(pt.Steps)-1, true)})
		for i, st := range pt.Steps {
			if IsScorableAction(st) {
				ds.ActionScoreItems = append(ds.ActionScoreItems, ActionItem{TraceID: s.ID, StepID: st.ID, Revision: s.Revision, Text: domain.RenderVersion(in.Config.InputVersion, pt.Steps, i, false)})
			}
		}
	}
	return ds, nil
}

// IsScorableAction: nonempty assistant responses and tool calls get action
// scores; user, system and tool-result steps are observations, and a
// thinking step is the reasoning behind the action that follows it.
func IsScorableAction(st domain.PairStep) bool {
	return st.Role == domain.RoleAssistant && !st.Thinking && (st.ToolName != "" || strings.TrimSpace(st.Content) != "")
}

// TooFewPairsError is the actionable failure of a dataset that cannot train.
type TooFewPairsError struct {
	Pairs, Traces int
	// Unavailable is set when feedback could not be extracted and the
	// selection has comments or conversations it would have learned from.
	Unavailable string
	// Findings and Usable count the attempt's findings and those that made
	// pairs, when it extracted.
	Findings, Usable int
	Extracted        bool
	// Automatic is set when the pairs came from the automatic annotation.
	Automatic bool
	// Criterion is the name of the criterion the model trains on, if any.
	Criterion string
}

func (e *TooFewPairsError) Error() string {
	const need = "training needs at least 2 preference pairs from at least 2 source traces"
	const split = need + " (the held-out split is by trace); "
	if e.Criterion != "" {
		return fmt.Sprintf(split+"the values of criterion %q on the selected traces give %d pair(s) from %d trace(s). Give it values that count for and against "+
			"(binary yes and no, labels scored 1 and -1, scale values above and below the middle) on at least two traces, then retry.", e.Criterion, e.Pairs, e.Traces)
	}
	if e.Automatic {
		return fmt.Sprintf(split+"the automatic annotation of the selected traces gives %d pair(s) from %d trace(s): comparisons need labeled actions with positive and negative credit. "+
			"Let the step labeler label the traces (CRITIC_STEP_LABEL_MODEL; GET /traces/{id} shows labeling), import labeled traces, or select more traces, then retry.", e.Pairs, e.Traces)
	}
	if e.Unavailable != "" {
		return fmt.Sprintf(need+"; the selected traces give %d pair(s) from %d trace(s) "+
			"from explicit ratings alone, because feedback extraction (which learns from comments, user reactions and AI judgments) is not available: %s", e.Pairs, e.Traces, e.Unavailable)
	}
	if e.Extracted {
		return fmt.Sprintf(split+"the selected traces give %d pair(s) from %d trace(s): %d finding(s) were extracted and %d made a pair (see feedback for each finding and why). "+
			"Add comments or ratings on more traces, or select more traces, then retry.", e.Pairs, e.Traces, e.Findings, e.Usable)
	}
	return fmt.Sprintf(split+"the selected traces give %d pair(s) from %d trace(s). Rate good traces or steps +1 and bad ones -1 on at least two traces, then retry.", e.Pairs, e.Traces)
}

// InputV3MaxLength is input version 3's token window.
const InputV3MaxLength = 4096

// findingPairs turns the accepted findings into pairs, in selection order
// then record order. An AI judgment on a step that carries an explicit
// rating is dropped: the rating takes precedence at that scope.
func findingPairs(selected []traces.State, ratings []domain.Rating, records []events.RewardModelFeedbackExtractedV1, version int) []DatasetPair {
	if len(records) == 0 {
		return nil
	}
	rated := map[string]bool{}
	for _, r := range ratings {
		if !r.LabelError && r.StepID != "" {
			rated[r.StepID] = true
		}
	}
	byTrace := map[string][]events.RewardModelFeedbackExtractedV1{}
	for _, r := range records {
		byTrace[r.TraceID] = append(byTrace[r.TraceID], r)
	}
	var out []DatasetPair
	for _, s := range selected {
		recs := byTrace[s.ID]
		if len(recs) == 0 {
			continue
		}
		targets := map[string]feedback.Target{}
		for _, t := range feedback.Targets(FeedbackTrace(s)) {
			targets[t.StepID] = t
		}
		for _, rec := range recs {
			if rec.TraceRevision != s.Revision {
				continue
			}
			for _, f := range rec.Findings {
				t, ok := targets[f.StepID]
				if !ok || f.Outcome != events.OutcomePair || f.AlternativeAction == nil {
					continue
				}
				if f.Source == events.FindingAIJudgment && rated[f.StepID] {
					continue
				}
				chosen, rejected := feedback.Pair(t, f)
				if version == 3 {
					chosen, rejected = feedback.PairV3(t, f)
				}
				at := domain.ActionResponse
				if t.IsToolCall {
					at = domain.ActionToolCall
				}
				dp := DatasetPair{Chosen: chosen, Rejected: rejected, TraceIDs: []string{s.ID}, Granularity: domain.GranularityStep,
					ActionType: &at, AnnotationIDs: []string{}, TraceRevisions: map[string]int{s.ID: s.Revision},
					Source: f.Source, FindingIDs: []string{f.ID}}
				if f.EvidenceID != nil && f.EvidenceQuote != nil {
					dp.Evidence = []PairEvidence{{ID: *f.EvidenceID, Quote: *f.EvidenceQuote}}
					if id, ok := strings.CutPrefix(*f.EvidenceID, "annotation:"); ok {
						dp.AnnotationIDs = []string{id}
					}
				}
				out = append(out, dp)
			}
		}
	}
	return out
}

// FeedbackTrace converts a trace's state into what extraction reads: its
// steps, its comments (flagged ones marked) and its rated steps.
func FeedbackTrace(s traces.State) feedback.Trace {
	pt := PairTrace(s)
	ft := feedback.Trace{ID: s.ID, Revision: s.Revision, Steps: pt.Steps, RatedSteps: map[string]bool{}}
	for _, st := range s.Steps {
		if h, _ := st.Metadata["harness"].(bool); h {
			if ft.HarnessSteps == nil {
				ft.HarnessSteps = map[string]bool{}
			}
			ft.HarnessSteps[st.ID] = true
		}
	}
	for _, a := range s.AnnotationsInOrder() {
		if a.Comment != nil && strings.TrimSpace(*a.Comment) != "" {
			ft.Comments = append(ft.Comments, feedback.Comment{AnnotationID: a.ID, StepID: a.StepID, Text: *a.Comment, Flagged: a.LabelError})
		}
		if a.Rating != nil && !a.LabelError && a.StepID != "" {
			ft.RatedSteps[a.StepID] = true
		}
	}
	return ft
}

// hasTargets: the selection has an assistant action extraction would
// assess (from comments, reactions, or an AI judgment).
func hasTargets(selected []traces.State) bool {
	return slices.ContainsFunc(selected, func(s traces.State) bool { return len(feedback.Targets(FeedbackTrace(s))) > 0 })
}

// ratingsOf is what a model learns from in s: the values of the criterion
// it trains on (none while that criterion is not known), else s's ratings.
func (in DatasetInputs) ratingsOf(s traces.State) []domain.Rating {
	if in.Config.Criterion == "" {
		return Ratings(s)
	}
	if in.Criterion == nil {
		return nil
	}
	return CriterionRatings(s, in.Criterion)
}

func tooFew(ds Dataset, selected []traces.State, in DatasetInputs) error {
	e := &TooFewPairsError{Pairs: len(ds.Pairs), Traces: ds.SourceTraces, Automatic: in.Config.AnnotationSource == events.SourceAutomatic,
		Criterion: in.Config.CriterionName}
	if in.Unavailable != "" && in.Config.AnnotationSource == events.SourceFeedback && hasTargets(selected) {
		e.Unavailable = in.Unavailable
	}
	for _, r := range in.Extracted {
		e.Extracted = true
		e.Findings += len(r.Findings)
		e.Usable += PairFindings(r)
	}
	return e
}

// PairFindings counts a trace's findings that made a pair.
func PairFindings(r events.RewardModelFeedbackExtractedV1) int {
	n := 0
	for _, f := range r.Findings {
		if f.Outcome == events.OutcomePair {
			n++
		}
	}
	return n
}

// SourceReviewedComparison marks a pair a person decided between an action
// and an AI-generated alternative (POST /comparisons).
const SourceReviewedComparison = "reviewed_comparison"

// ComparisonPairs are the pairs of the traces' decided comparisons (ties make
// none) whose step the trace still has, in selection and recording order,
// each with its provenance: the comparison, the finding that proposed the
// alternative, the revision it was reviewed at.
func ComparisonPairs(selected []traces.State, version int) []DatasetPair {
	var out []DatasetPair
	has := map[string]bool{} // trace id/step id of the selected traces
	revision := map[string]int{}
	for _, s := range selected {
		revision[s.ID] = s.Revision
		for _, st := range s.Steps {
			has[s.ID+"/"+st.ID] = true
		}
	}
	for _, s := range selected {
		for _, c := range s.Comparisons {
			if c.Source == events.ComparisonFromModels {
				// Two models' preferred actions: both traces must be
				// selected and still have the actions' steps.
				if !has[c.Left.TraceID+"/"+c.Left.StepID] || !has[c.Right.TraceID+"/"+c.Right.StepID] {
					continue
				}
			} else if !has[s.ID+"/"+c.StepID] {
				continue
			}
			chosen, rejected, ok := comparisons.Pair(c)
			if !ok {
				continue
			}
			if version == 3 {
				win, lose := c.Left.Action, c.Right.Action
				if c.Choice == events.ChoiceRight {
					win, lose = lose, win
				}
				chosen, rejected = domain.V3Sections(c.Context, win), domain.V3Sections(c.Context, lose)
			}
			at := domain.ActionResponse
			if c.ToolName != "" {
				at = domain.ActionToolCall
			}
			dp := DatasetPair{Chosen: chosen, Rejected: rejected, TraceIDs: []string{s.ID}, Granularity: domain.GranularityStep,
				ActionType: &at, AnnotationIDs: []string{}, TraceRevisions: map[string]int{s.ID: s.Revision},
				Source: SourceReviewedComparison, FindingIDs: []string{c.FindingID}, ComparisonIDs: []string{c.ComparisonID}}
			if c.Source == events.ComparisonFromModels {
				dp.FindingIDs = nil // no finding: the models' key names it
				for _, side := range []events.ComparisonSide{c.Left, c.Right} {
					if _, ok := dp.TraceRevisions[side.TraceID]; !ok {
						dp.TraceIDs = append(dp.TraceIDs, side.TraceID)
						dp.TraceRevisions[side.TraceID] = revision[side.TraceID]
					}
				}
			}
			out = append(out, dp)
		}
	}
	return out
}
