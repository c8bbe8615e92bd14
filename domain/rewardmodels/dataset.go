package rewardmodels

import (
	"fmt"
	"sort"
	"strings"

	"github.com/criticml/critic/domain"
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
}

// PairTrace converts a trace's state into what pair construction reads.
func PairTrace(s traces.State) domain.PairTrace {
	pt := domain.PairTrace{ID: s.ID, Steps: make([]domain.PairStep, len(s.Steps))}
	for i, st := range s.Steps {
		pt.Steps[i] = domain.PairStep{ID: st.ID, Role: st.Role, Content: st.Content, ToolName: st.ToolName, ToolInput: st.ToolInput}
	}
	return pt
}

// Ratings lists a trace's rating annotations in id order.
func Ratings(s traces.State) []domain.Rating {
	var out []domain.Rating
	ids := make([]string, 0, len(s.Annotations))
	for id := range s.Annotations {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		a := s.Annotations[id]
		if a.Rating != nil {
			out = append(out, domain.Rating{AnnotationID: a.ID, TraceID: s.ID, StepID: a.StepID, Rating: *a.Rating, LabelError: a.LabelError})
		}
	}
	return out
}

// BuildDataset builds an attempt's dataset: pairs from the selected traces'
// ratings (in selection order), and the texts to score from every trace the
// owner has. It fails, before any model is loaded, when the selection gives
// fewer than 2 pairs or pairs from fewer than 2 source traces (the held-out
// split is by trace).
func BuildDataset(modelID string, attempt int, asOfSeq int64, selected, all []traces.State, maxPairs int) (Dataset, error) {
	if maxPairs <= 0 {
		maxPairs = domain.DefaultMaxPairs
	}
	ds := Dataset{ModelID: modelID, Attempt: attempt, AsOfSeq: asOfSeq, Pairs: []DatasetPair{}, ScoreItems: []ScoreItem{}, ActionScoreItems: []ActionItem{}}
	var pts []domain.PairTrace
	var ratings []domain.Rating
	revision := map[string]int{}
	for _, s := range selected {
		pts = append(pts, PairTrace(s))
		ratings = append(ratings, Ratings(s)...)
		revision[s.ID] = s.Revision
	}
	sources := map[string]bool{}
	for _, p := range domain.BuildPairs(pts, ratings, maxPairs) {
		dp := DatasetPair{Chosen: p.Chosen, Rejected: p.Rejected, TraceIDs: p.TraceIDs, Granularity: p.Granularity,
			AnnotationIDs: p.AnnotationIDs, TraceRevisions: map[string]int{}}
		if p.ActionType != "" {
			at := p.ActionType
			dp.ActionType = &at
		}
		for _, id := range p.TraceIDs {
			dp.TraceRevisions[id] = revision[id]
			sources[id] = true
		}
		ds.Pairs = append(ds.Pairs, dp)
	}
	ds.SourceTraces = len(sources)
	if len(ds.Pairs) < 2 || ds.SourceTraces < 2 {
		return ds, &TooFewPairsError{Pairs: len(ds.Pairs), Traces: ds.SourceTraces}
	}
	for _, s := range all {
		pt := PairTrace(s)
		ds.ScoreItems = append(ds.ScoreItems, ScoreItem{TraceID: s.ID, Revision: s.Revision, Text: domain.RenderTrace(pt.Steps)})
		for i, st := range pt.Steps {
			if IsScorableAction(st) {
				ds.ActionScoreItems = append(ds.ActionScoreItems, ActionItem{TraceID: s.ID, StepID: st.ID, Revision: s.Revision, Text: domain.RenderUpTo(pt.Steps, i)})
			}
		}
	}
	return ds, nil
}

// IsScorableAction: nonempty assistant responses and tool calls get action
// scores; user, system and tool-result steps are observations.
func IsScorableAction(st domain.PairStep) bool {
	return st.Role == domain.RoleAssistant && (st.ToolName != "" || strings.TrimSpace(st.Content) != "")
}

// TooFewPairsError is the actionable failure of a dataset that cannot train.
type TooFewPairsError struct{ Pairs, Traces int }

func (e *TooFewPairsError) Error() string {
	return fmt.Sprintf("training needs at least 2 preference pairs from at least 2 source traces (the held-out split is by trace); "+
		"the selected traces give %d pair(s) from %d trace(s). Rate good traces or steps +1 and bad ones -1 on at least two traces, then retry.", e.Pairs, e.Traces)
}
