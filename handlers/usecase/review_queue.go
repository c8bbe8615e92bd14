package usecase

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/projections/readmodel"
)

// Review queue rankings.
const (
	// RankUncertainty: a chosen model's least certain traces and actions.
	RankUncertainty = "uncertainty"
	// RankUnannotated: without a model, the traces with fewest annotations.
	RankUnannotated = "unannotated_first"
)

// CalibrationFormula names how whole-trace scores are calibrated for the
// ranking, as the API and the web app state it.
const CalibrationFormula = "sigmoid((score − mean) / std), mean and std from the model's reward_stats"

// DefaultReviewLimit and MaxReviewLimit bound ?limit of the review queue.
const (
	DefaultReviewLimit = 200
	MaxReviewLimit     = 1000
)

// ReviewItem is one thing the review queue asks a human about: a whole
// trace (step fields null) or one action.
type ReviewItem struct {
	Kind       string  `json:"kind"` // trace | action
	TraceID    string  `json:"trace_id"`
	TraceTitle string  `json:"trace_title"`
	StepID     *string `json:"step_id"`
	StepIndex  *int    `json:"step_index"`
	// Score is the model's raw reward; Calibrated (traces) is
	// sigmoid((score − mean)/std); Credit (actions) is the action credit.
	Score      *float64 `json:"score"`
	Calibrated *float64 `json:"calibrated"`
	Credit     *float64 `json:"credit"`
	// Uncertainty is |2·calibrated − 1| for a trace, |credit| for an
	// action: one 0–1 scale (0 = the model cannot tell), the queue's order.
	Uncertainty *float64 `json:"uncertainty"`
	// AnnotationCount is the trace's annotations (the no-model ranking).
	AnnotationCount *int `json:"annotation_count"`
}

// ReviewQueue is GET /review-queue's answer.
type ReviewQueue struct {
	RewardModelID *string `json:"reward_model_id"`
	Ranking       string  `json:"ranking"`
	// Calibration is the formula behind calibrated (null without a model).
	Calibration *string      `json:"calibration"`
	Items       []ReviewItem `json:"items"`
}

// ReviewQueue ranks what most needs a human. With modelID (the caller's
// succeeded model): whole traces nobody rated, by calibrated score nearest
// 0.5, interleaved with unrated actions by credit nearest zero, on one
// uncertainty scale (rewardmodels.TraceUncertainty); only scores of a
// trace's current revision count; thinking steps are never actions. Without
// one: the traces the caller has not rated as a whole, fewest annotations
// first.
//
// The queue is member's (the id a member of the caller's account puts on
// their annotations as author; "" is the caller's own): with several
// members it offers what still needs a judgment under the account's
// overlap (the rule: readmodel's needsJudgment).
func (b Backend) ReviewQueue(ctx context.Context, caller *readmodel.Caller, member, modelID string, limit int) (ReviewQueue, error) {
	member = cmp.Or(member, Actor(caller).Member()) // the key's member, or the account for its implicit admin
	overlap, err := b.Queries.ReviewOverlap(ctx, caller.UserID)
	if err != nil {
		return ReviewQueue{}, err
	}
	if modelID == "" {
		cands, err := b.Queries.LeastAnnotatedTraces(ctx, caller.UserID, member, overlap, limit)
		if err != nil {
			return ReviewQueue{}, err
		}
		out := ReviewQueue{Ranking: RankUnannotated, Items: make([]ReviewItem, 0, len(cands))}
		for _, c := range cands {
			out.Items = append(out.Items, ReviewItem{Kind: "trace", TraceID: c.TraceID, TraceTitle: c.TraceTitle, AnnotationCount: new(c.Annotations)})
		}
		return out, nil
	}
	m, err := b.Queries.GetRewardModel(ctx, caller.UserID, modelID)
	if err != nil {
		return ReviewQueue{}, err
	}
	if m.Status != rewardmodels.StatusSucceeded {
		return ReviewQueue{}, &domain.ConflictError{Code: "model_not_ready",
			Message: "reward model " + modelID + " is " + m.Status + ": only a succeeded model has scores to rank by"}
	}
	if m.RewardStats == nil {
		return ReviewQueue{}, &domain.ConflictError{Code: "no_reward_stats",
			Message: "reward model " + modelID + " has no reward statistics (reward_stats.json), so its trace scores cannot be calibrated; retrain it"}
	}
	stats := *m.RewardStats
	traces, err := b.Queries.UncertainTraces(ctx, caller.UserID, member, overlap, modelID, stats.Mean, limit)
	if err != nil {
		return ReviewQueue{}, err
	}
	actions, err := b.Queries.UncertainActions(ctx, caller.UserID, member, overlap, modelID, limit)
	if err != nil {
		return ReviewQueue{}, err
	}
	items := make([]ReviewItem, 0, len(traces)+len(actions))
	for _, c := range traces {
		cal := stats.Calibrated(*c.Score)
		u := rewardmodels.TraceUncertainty(cal)
		items = append(items, ReviewItem{Kind: "trace", TraceID: c.TraceID, TraceTitle: c.TraceTitle, Score: c.Score, Calibrated: &cal, Uncertainty: &u})
	}
	for _, c := range actions {
		u := rewardmodels.ActionUncertainty(*c.Credit)
		items = append(items, ReviewItem{Kind: "action", TraceID: c.TraceID, TraceTitle: c.TraceTitle, StepID: c.StepID, StepIndex: c.StepIndex,
			Score: c.Score, Credit: c.Credit, Uncertainty: &u})
	}
	// Both lists come sorted; a stable sort keeps their own order among
	// equals and puts a whole trace before an action at the same number.
	slices.SortStableFunc(items, func(a, b ReviewItem) int {
		return cmp.Or(cmp.Compare(*a.Uncertainty, *b.Uncertainty), strings.Compare(b.Kind, a.Kind))
	})
	if len(items) > limit {
		items = items[:limit]
	}
	return ReviewQueue{RewardModelID: new(m.ID), Ranking: RankUncertainty, Calibration: new(CalibrationFormula), Items: items}, nil
}
