package usecase

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/agreement"
	"github.com/criticml/critic/domain/criteria"
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/projections/readmodel"
)

// Metrics of an agreement figure, as GET /agreement names them.
const (
	MetricNominal  = "nominal"
	MetricInterval = "interval"
)

// CriterionAgreement is one criterion's alpha over its values.
type CriterionAgreement struct {
	CriterionID string           `json:"criterion_id"`
	Name        string           `json:"name"`
	Kind        string           `json:"kind"`
	Metric      string           `json:"metric"`
	Alpha       agreement.Figure `json:"alpha"`
}

// MemberAgreement is agreement.MemberFigure with the member's name.
type MemberAgreement struct {
	agreement.MemberFigure
	Name string `json:"name"`
}

// AgreementReport is GET /agreement's answer (issue 36): how far the
// account's members agree, over the targets two or more of them judged.
type AgreementReport struct {
	// MinSample is the count below which a figure is too_few.
	MinSample     int     `json:"min_sample"`
	RewardModelID *string `json:"reward_model_id"`
	// Account is Krippendorff's alpha over the ratings (interval metric;
	// for ±1 ratings the nominal one gives the same number).
	Account   agreement.Figure       `json:"account"`
	Criteria  []CriterionAgreement   `json:"criteria"`
	Pairwise  []agreement.PairFigure `json:"pairwise"`
	Members   []MemberAgreement      `json:"members"`
	Disputed  int                    `json:"disputed"`
	CoRated   int                    `json:"co_rated"`
	Judgments int                    `json:"judgments"`
}

// ratingTarget is a rating's target key: the trace, or trace/step.
func ratingTarget(j readmodel.TeamJudgment) string {
	if j.StepID == "" {
		return j.TraceID
	}
	return j.TraceID + "/" + j.StepID
}

// criterionNumber is a criterion value as agreement compares it: a scale
// value its number (interval metric), a binary or categorical value the
// index of its choice (nominal metric: only equality counts). ok is false
// for a value the criterion does not know.
func criterionNumber(c readmodel.Criterion, raw json.RawMessage) (float64, bool) {
	switch c.Kind {
	case criteria.KindScale:
		v, err := strconv.ParseFloat(string(raw), 64)
		return v, err == nil
	case criteria.KindBinary, criteria.KindCategorical:
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return 0, false
		}
		if c.Kind == criteria.KindBinary {
			switch s {
			case "yes":
				return 1, true
			case "no":
				return 0, true
			}
			return 0, false
		}
		for i, l := range c.Labels {
			if l.Name == s {
				return float64(i), true
			}
		}
	}
	return 0, false
}

// Agreement computes the account's agreement figures from the read
// model's live judgments (ratings and criterion values not flagged as
// label errors). With modelID (a succeeded model of the caller), each
// member's agreement with it: a trace's preference is the sign of its
// score minus the model's mean score (reward_stats), an action's the sign
// of its credit.
func (b Backend) Agreement(ctx context.Context, caller *readmodel.Caller, modelID string) (AgreementReport, error) {
	js, err := b.Queries.TeamJudgments(ctx, caller.UserID)
	if err != nil {
		return AgreementReport{}, err
	}
	out := AgreementReport{MinSample: agreement.MinSample, Criteria: []CriterionAgreement{}}
	var ratings []agreement.Judgment
	byCriterion := map[string][]agreement.Judgment{}
	names := map[string]string{}
	crits, err := b.Queries.ListCriteria(ctx, caller.UserID, true)
	if err != nil {
		return AgreementReport{}, err
	}
	crit := map[string]readmodel.Criterion{}
	for _, c := range crits {
		crit[c.CriterionID] = c
	}
	for _, j := range js {
		names[j.Member] = j.MemberName
		switch {
		case j.CriterionID == "" && j.Rating != nil:
			ratings = append(ratings, agreement.Judgment{Target: ratingTarget(j), Member: j.Member, Value: float64(*j.Rating)})
		case j.CriterionID != "":
			if v, ok := criterionNumber(crit[j.CriterionID], j.Value); ok {
				byCriterion[j.CriterionID] = append(byCriterion[j.CriterionID], agreement.Judgment{Target: ratingTarget(j), Member: j.Member, Value: v})
			}
		}
	}
	var scores map[string]float64
	if modelID != "" {
		m, err := b.Queries.GetRewardModel(ctx, caller.UserID, modelID)
		if err != nil {
			return AgreementReport{}, err
		}
		if m.Status != rewardmodels.StatusSucceeded || m.RewardStats == nil {
			return AgreementReport{}, &domain.ConflictError{Code: "model_not_ready",
				Message: "reward model " + modelID + " is " + m.Status + ": only a succeeded model with reward statistics has scores to compare with"}
		}
		traceScores, credits, err := b.Queries.ModelPreferences(ctx, caller.UserID, modelID)
		if err != nil {
			return AgreementReport{}, err
		}
		scores = map[string]float64{}
		for _, j := range ratings {
			trace, step, _ := strings.Cut(j.Target, "/")
			if step == "" {
				if s, ok := traceScores[trace]; ok {
					scores[j.Target] = s - m.RewardStats.Mean
				}
			} else if c, ok := credits[step]; ok {
				scores[j.Target] = c
			}
		}
		id := m.ID
		out.RewardModelID = &id
	}
	out.Account = agreement.Alpha(ratings, agreement.Interval)
	out.CoRated, out.Judgments = out.Account.N, len(ratings)
	out.Disputed = len(agreement.Disputed(ratings))
	out.Pairwise = agreement.Pairwise(ratings)
	out.Members = []MemberAgreement{}
	for _, f := range agreement.Members(ratings, scores) {
		out.Members = append(out.Members, MemberAgreement{MemberFigure: f, Name: names[f.Member]})
	}
	for _, c := range crits {
		js := byCriterion[c.CriterionID]
		if len(js) == 0 {
			continue
		}
		name, metric := MetricNominal, agreement.Nominal
		if c.Kind == criteria.KindScale {
			name, metric = MetricInterval, agreement.Interval
		}
		out.Criteria = append(out.Criteria, CriterionAgreement{CriterionID: c.CriterionID, Name: c.Name, Kind: c.Kind, Metric: name, Alpha: agreement.Alpha(js, metric)})
	}
	return out, nil
}

// DisputedValue is one member's judgment of a disputed target.
type DisputedValue struct {
	Member string          `json:"member"`
	Name   string          `json:"name"`
	Value  json.RawMessage `json:"value"`
}

// DisputedItem is a target whose members disagree (GET /disputed).
type DisputedItem struct {
	TraceID      string                  `json:"trace_id"`
	TraceTitle   string                  `json:"trace_title"`
	StepID       *string                 `json:"step_id"`
	StepIndex    *int                    `json:"step_index"` // zero-based; null for the whole trace
	CriterionID  *string                 `json:"criterion_id"`
	Values       []DisputedValue         `json:"values"`
	Adjudication *readmodel.Adjudication `json:"adjudication"`
}

// Disputed is GET /disputed's answer.
type Disputed struct {
	Items []DisputedItem `json:"items"`
}

// Disputed lists the targets — ratings, and each criterion's values —
// judged by two or more members who did not all agree
// (agreement.Disputed), by trace title then target, each with its
// adjudication when an admin made one.
func (b Backend) Disputed(ctx context.Context, caller *readmodel.Caller) (Disputed, error) {
	js, err := b.Queries.TeamJudgments(ctx, caller.UserID)
	if err != nil {
		return Disputed{}, err
	}
	adjs, err := b.Queries.Adjudications(ctx, caller.UserID)
	if err != nil {
		return Disputed{}, err
	}
	type key struct{ trace, step, criterion string }
	adjOf := map[key]*readmodel.Adjudication{}
	for i, a := range adjs {
		adjOf[key{a.TraceID, domain.OrEmpty(a.StepID), domain.OrEmpty(a.CriterionID)}] = &adjs[i]
	}
	// Compare raw values per (target, criterion): equal JSON is agreement.
	groups := map[key]map[string]readmodel.TeamJudgment{}
	title := map[string]string{}
	for _, j := range js {
		if j.CriterionID == "" && j.Rating == nil {
			continue
		}
		k := key{j.TraceID, j.StepID, j.CriterionID}
		if groups[k] == nil {
			groups[k] = map[string]readmodel.TeamJudgment{}
		}
		groups[k][j.Member] = j
		title[j.TraceID] = j.TraceTitle
	}
	out := Disputed{Items: []DisputedItem{}}
	for k, byMember := range groups {
		var list []agreement.Judgment
		values := map[string]float64{}
		for m, j := range byMember {
			raw := valueOf(j)
			if _, ok := values[string(raw)]; !ok {
				values[string(raw)] = float64(len(values))
			}
			list = append(list, agreement.Judgment{Target: "t", Member: m, Value: values[string(raw)]})
		}
		if len(agreement.Disputed(list)) == 0 {
			continue
		}
		it := DisputedItem{TraceID: k.trace, TraceTitle: title[k.trace], StepID: NonEmpty(k.step), CriterionID: NonEmpty(k.criterion),
			Values: []DisputedValue{}, Adjudication: adjOf[k]}
		for m, j := range byMember {
			it.Values = append(it.Values, DisputedValue{Member: m, Name: j.MemberName, Value: valueOf(j)})
			it.StepIndex = j.StepIndex
		}
		sort.Slice(it.Values, func(i, j int) bool { return it.Values[i].Member < it.Values[j].Member })
		out.Items = append(out.Items, it)
	}
	slices.SortFunc(out.Items, func(a, b DisputedItem) int {
		return cmp.Or(cmp.Compare(a.TraceTitle, b.TraceTitle), cmp.Compare(a.TraceID, b.TraceID),
			cmp.Compare(domain.OrEmpty(a.StepID)+"/"+domain.OrEmpty(a.CriterionID), domain.OrEmpty(b.StepID)+"/"+domain.OrEmpty(b.CriterionID)))
	})
	return out, nil
}

// valueOf is a judgment's value as the API shows it: the rating, or the
// criterion's stored value.
func valueOf(j readmodel.TeamJudgment) json.RawMessage {
	if j.CriterionID == "" {
		return json.RawMessage(strconv.Itoa(*j.Rating))
	}
	return j.Value
}

// NonEmpty is nil for "" (the API's null, and absent in proto3), else &s.
func NonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// ReviewOverlap is GET/PUT /review-overlap's answer.
type ReviewOverlap struct {
	Overlap int `json:"overlap"`
}

// SetReviewOverlap sets how many members judge each review queue item
// and answers the setting once the read model has it.
func (b Backend) SetReviewOverlap(ctx context.Context, caller *readmodel.Caller, overlap int) (ReviewOverlap, error) {
	res, err := b.Cmds.SetReviewOverlap.Handle(ctx, commands.SetReviewOverlap{Actor: Actor(caller), Overlap: overlap})
	return settled(ctx, b, res, err, func() (ReviewOverlap, error) { return b.GetReviewOverlap(ctx, caller) })
}

// GetReviewOverlap is the account's review overlap.
func (b Backend) GetReviewOverlap(ctx context.Context, caller *readmodel.Caller) (ReviewOverlap, error) {
	n, err := b.Queries.ReviewOverlap(ctx, caller.UserID)
	return ReviewOverlap{Overlap: n}, err
}

// Adjudicate records an admin's final judgment of a target and answers
// it as GET /disputed will show it.
func (b Backend) Adjudicate(ctx context.Context, caller *readmodel.Caller, in commands.AdjudicateInput) (readmodel.Adjudication, error) {
	res, err := b.Cmds.Adjudicate.Handle(ctx, commands.Adjudicate{Actor: Actor(caller), Input: in})
	if err := b.applied(ctx, res.Result, err); err != nil {
		return readmodel.Adjudication{}, err
	}
	p := res.Adjudication
	out := readmodel.Adjudication{AdjudicationID: p.AdjudicationID, TraceID: p.TraceID, StepID: NonEmpty(p.StepID), Reason: p.Reason, By: p.By, Value: p.Value}
	if p.CriterionID != "" {
		out.CriterionID = &p.CriterionID
	} else {
		out.Rating = &p.Rating
	}
	return out, nil
}

// WithMemberAgreement fills a model's learning-report agreement with each
// member's agreement with the model (Agreement with the model chosen), once
// it succeeded with reward statistics; before that the list stays empty.
func (b Backend) WithMemberAgreement(ctx context.Context, caller *readmodel.Caller, d *readmodel.RewardModelDetail) error {
	if d.Agreement == nil || d.Status != rewardmodels.StatusSucceeded || d.RewardStats == nil {
		return nil
	}
	rep, err := b.Agreement(ctx, caller, d.ID)
	if err != nil {
		return err
	}
	for _, m := range rep.Members {
		if m.Model != nil {
			d.Agreement.Members = append(d.Agreement.Members, readmodel.ModelMemberAgreement{Member: m.Member, Name: m.Name, Judged: m.Judged, Model: *m.Model})
		}
	}
	return nil
}
