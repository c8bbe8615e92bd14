package stepscores

import (
	"math"

	"github.com/criticml/critic/domain/labels"
)

// Line is one line of a step's score breakdown: which rule gave how many
// points, and for credit passed back, from which answer and how far.
type Line struct {
	Rule   string  `json:"rule"`
	Points float64 `json:"points"`
	// Value is the label value the rule read (the verdict, the outcome).
	Value string `json:"value,omitempty"`
	// FromChunk and K say where passed-back credit came from: the answer's
	// chunk and how many agent steps before it this step is.
	FromChunk string `json:"from_chunk,omitempty"`
	K         int    `json:"k,omitempty"`
}

// StepReward is a step's breakdown, `steps[].metadata.reward`.
type StepReward struct {
	Policy  string `json:"policy"`
	ChunkID string `json:"chunk_id"`
	TaskID  string `json:"task_id"`
	// Kind is "answer" (earns points by reaction) or "work" (costs points).
	Kind  string `json:"kind"`
	Lines []Line `json:"lines"`
	// Points are the step's own points; CreditIn what later reacted answers
	// passed back; Score their sum capped to −1..+1 (Capped says it was).
	Points   float64 `json:"points"`
	CreditIn float64 `json:"credit_in"`
	Score    float64 `json:"score"`
	Capped   bool    `json:"capped"`
	// Credit is the legacy ordinal credit (−2..2), the band Score falls in.
	Credit int `json:"credit"`
	// ReactedBy is the user chunk whose verdict scored this answer.
	ReactedBy string `json:"reacted_by,omitempty"`
	// ExpectedCredit is the probability-weighted credit (−1..1) when the step
	// carries a classifier's distribution (see ExpectedCredit); nil otherwise.
	ExpectedCredit *float64 `json:"expected_credit"`
	// QualityCheck is the grading model's answer that changed this step's
	// points (ScoreWith), absent when none did.
	QualityCheck *CheckResult `json:"quality_check,omitempty"`
}

// TaskScore is one task's score, an entry of `step_scores.tasks`.
type TaskScore struct {
	TaskID string `json:"task_id"`
	// FirstChunk and LastChunk are the task's first and last labeled chunks
	// (indices into the trace's chunks); callers map them to step ids.
	FirstChunk int `json:"-"`
	LastChunk  int `json:"-"`
	// AnswerChunk is the task's final answer; AnswerPoints its points (nil
	// when the task has no answer).
	AnswerChunk  string   `json:"answer_chunk_id"`
	AnswerPoints *float64 `json:"answer_points"`
	// Work is the sum of the task's work costs (never above zero).
	Work   float64 `json:"work"`
	Score  float64 `json:"score"`
	Capped bool    `json:"capped"`
}

// Result is the step scores of one trace.
type Result struct {
	Policy string
	// Steps[i] is the breakdown of chunk i, nil for user chunks and
	// unlabeled ones.
	Steps []*StepReward
	Tasks []TaskScore
	// TraceScore is the mean task score; nil without tasks.
	TraceScore *float64
	Outcome    string
}

// ScoreWith applies the rules to a labeled trace: chunks in trace order and
// their labels (nil = unlabeled, which scores nothing), with the quality
// checks a grading model answered, by chunk id (nil or empty: none). A
// check changes only the step it
// is about, only when that step is open to its question (see QuestionFor)
// and its distribution is well formed (see Blend); the result's Policy then
// names CheckPolicy too.
func ScoreWith(chunks []labels.Chunk, ls []*labels.Label, checks map[string]Check) Result {
	res := Result{Policy: Policy, Steps: make([]*StepReward, len(chunks)), Outcome: OutcomeInsufficientEvidence}
	checked := false
	reaction := reactions(ls) // answer chunk → user chunk
	// Own points.
	var taskOrder []string
	taskAgents := map[string][]int{}
	taskFirst, taskLast := map[string]int{}, map[string]int{}
	for i, l := range ls {
		if l == nil {
			continue
		}
		if _, ok := taskFirst[l.TaskID]; !ok {
			taskFirst[l.TaskID] = i
			taskOrder = append(taskOrder, l.TaskID)
		}
		taskLast[l.TaskID] = i
		if l.Actor != labels.ActorAgent {
			continue
		}
		taskAgents[l.TaskID] = append(taskAgents[l.TaskID], i)
		r := &StepReward{Policy: Policy, ChunkID: l.ChunkID, TaskID: l.TaskID, Lines: []Line{}}
		if l.IsAnswer() {
			r.Kind = "answer"
			if u, ok := reaction[i]; ok {
				v := ls[u].Verdict
				r.Lines = append(r.Lines, Line{Rule: RuleReaction, Value: v, Points: ReactionPoints[v]})
				r.ReactedBy = ls[u].ChunkID
			} else {
				r.Lines = append(r.Lines, Line{Rule: RuleUnreacted, Value: l.Outcome, Points: UnreactedPoints[l.Outcome]})
			}
		} else {
			r.Kind = "work"
			switch {
			case l.Type == labels.TypeQuestion:
				r.Lines = append(r.Lines, Line{Rule: RuleQuestion, Points: CostQuestion})
			case l.Type == labels.TypeToolCall && l.Effect == labels.EffectChange:
				r.Lines = append(r.Lines, Line{Rule: RuleChange, Points: CostChange})
			case l.Type == labels.TypeToolCall:
				r.Lines = append(r.Lines, Line{Rule: RuleLookup, Points: CostLookup})
			}
			if l.Type == labels.TypeToolCall && l.Result == labels.ResultError {
				r.Lines = append(r.Lines, Line{Rule: RuleError, Points: CostError})
			}
			if l.DuplicateOf != nil {
				r.Lines = append(r.Lines, Line{Rule: RuleRepeat, Value: *l.DuplicateOf, Points: CostRepeat})
			}
		}
		if c, ok := checks[l.ChunkID]; ok {
			_, reacted := reaction[i]
			if applyCheck(r, *l, reacted, c) {
				checked = true
			}
		}
		for _, ln := range r.Lines {
			r.Points += ln.Points
		}
		res.Steps[i] = r
	}
	// Credit flows back within the task, over its agent steps.
	for _, task := range taskOrder {
		agents := taskAgents[task]
		for p, i := range agents {
			u, ok := reaction[i]
			if !ok {
				continue
			}
			pts := ReactionPoints[ls[u].Verdict]
			for k := 1; k <= p; k++ {
				back := BackShare * pts * math.Pow(BackDecay, float64(k))
				t := res.Steps[agents[p-k]]
				t.Lines = append(t.Lines, Line{Rule: RuleCreditBack, Points: round(back), FromChunk: ls[i].ChunkID, K: k})
				t.CreditIn += back
			}
		}
	}
	for _, r := range res.Steps {
		if r == nil {
			continue
		}
		r.Points, r.CreditIn = round(r.Points), round(r.CreditIn)
		r.Score, r.Capped = clamp(r.Points + r.CreditIn)
		r.Credit = OrdinalCredit(r.Score)
	}
	if checked {
		res.Policy = Policy + "+" + CheckPolicy
		for _, r := range res.Steps {
			if r != nil {
				r.Policy = res.Policy
			}
		}
	}
	// Tasks, the trace score and the outcome.
	var sum, finals float64
	answered := 0
	for _, task := range taskOrder {
		ts := TaskScore{TaskID: task, FirstChunk: taskFirst[task], LastChunk: taskLast[task]}
		final := -1
		for _, i := range taskAgents[task] {
			r := res.Steps[i]
			if r.Kind == "answer" {
				final = i
			} else {
				ts.Work += r.Points
			}
		}
		ts.Work = round(ts.Work)
		total := ts.Work
		if final >= 0 {
			p := res.Steps[final].Points
			ts.AnswerChunk, ts.AnswerPoints = ls[final].ChunkID, &p
			total += p
			finals += p
			answered++
		}
		ts.Score, ts.Capped = clamp(total)
		sum += ts.Score
		res.Tasks = append(res.Tasks, ts)
	}
	if len(res.Tasks) > 0 {
		res.TraceScore = new(round(sum / float64(len(res.Tasks))))
	}
	if answered > 0 {
		mean := finals / float64(answered)
		switch {
		case mean >= SuccessThreshold-1e-9:
			res.Outcome = OutcomeSuccess
		case mean < -1e-9:
			res.Outcome = OutcomeFailure
		default:
			res.Outcome = OutcomePartialSuccess
		}
	}
	return res
}

// clamp caps a score to −1..+1 and says whether it had to.
func clamp(x float64) (float64, bool) {
	x = round(x)
	switch {
	case x > 1:
		return 1, true
	case x < -1:
		return -1, true
	}
	return x, false
}

// round keeps six decimals, so sums of the published constants print as
// the numbers a reader computes by hand (0.3, not 0.30000000000000004).
func round(x float64) float64 { return math.Round(x*1e6) / 1e6 }

// OrdinalCredit is the legacy ordinal credit (−2..2) of a score: the nearest
// of the five anchors −1, −0.5, 0, +0.5, +1, ties toward zero.
func OrdinalCredit(score float64) int {
	switch {
	case score < -0.75:
		return -2
	case score < -0.25:
		return -1
	case score <= 0.25:
		return 0
	case score <= 0.75:
		return 1
	}
	return 2
}

// reactions maps each answer the user reacted to (chunk index) to the user
// chunk whose readable verdict scores it: the latest such verdict wins.
func reactions(ls []*labels.Label) map[int]int {
	byID := map[string]int{}
	for i, l := range ls {
		if l != nil {
			byID[l.ChunkID] = i
		}
	}
	reaction := map[int]int{}
	lastAnswer := -1
	for i, l := range ls {
		if l == nil {
			continue
		}
		if l.IsAnswer() {
			lastAnswer = i
			continue
		}
		if l.Actor != labels.ActorUser {
			continue
		}
		if _, ok := ReactionPoints[l.Verdict]; !ok {
			continue
		}
		target := lastAnswer
		if l.VerdictTarget != nil {
			j, ok := byID[*l.VerdictTarget]
			if !ok || j > i || !ls[j].IsAnswer() {
				continue
			}
			target = j
		}
		if target >= 0 {
			reaction[target] = i
		}
	}
	return reaction
}
