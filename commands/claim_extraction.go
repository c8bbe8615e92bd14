package commands

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/feedback"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/rewardmodels"
)

// ClaimExtraction gives one worker an attempt's extraction. Findings already
// recorded for the same trace revision, classifier model, prompt version
// and criteria (an earlier attempt, or this one before its worker died) are
// reused — copied into this attempt without a model call — and their traces
// left out of the inputs.
type ClaimExtraction struct {
	WorkerID string
	ModelID  string
	Attempt  int
	Lease    time.Duration
}

// ClaimExtractionHandler runs ClaimExtraction.
type ClaimExtractionHandler struct{ *Streams }

// Handle runs the command.
func (c ClaimExtractionHandler) Handle(ctx context.Context, cmd ClaimExtraction) (ExtractionClaim, error) {
	st, err := c.loadModel(ctx, "", cmd.ModelID)
	if err != nil {
		return ExtractionClaim{}, err
	}
	if err := rewardmodels.DecideClaimExtraction(st, cmd.Attempt, cmd.WorkerID, cmd.Lease, time.Now()); err != nil {
		return ExtractionClaim{}, err
	}
	asOf, err := c.QueuedAt(ctx, st)
	if err != nil {
		return ExtractionClaim{}, err
	}
	selected, _, err := c.selection(ctx, st, asOf)
	if err != nil {
		return ExtractionClaim{}, err
	}
	criteria := st.Config.Criteria
	if len(criteria) == 0 {
		criteria = feedback.DefaultCriteria
	}
	hash := feedback.ConfigHash(criteria)
	in := jobs.ExtractionInputs{ModelID: st.ID, Attempt: cmd.Attempt, ClassifierModel: st.Plan.Model, PromptVersion: feedback.PromptVersion,
		Criteria: criteria, ConfigHash: hash, RubricDropout: true, Traces: []feedback.Trace{}}

	var pts []domain.PairTrace
	var ratings []domain.Rating
	for _, s := range selected {
		pts = append(pts, rewardmodels.PairTraceFor(s, st.Config))
		ratings = append(ratings, rewardmodels.Ratings(s)...)
	}
	have := len(domain.BuildPairsRendered(pts, ratings, st.Requested.MaxPairs, st.Config.InputVersion))
	stream := events.RewardModelStream(st.ID)
	var reused []events.New
	total, done := 0, 0
	recorded := map[string]bool{}
	for _, r := range st.Extracted {
		recorded[r.TraceID] = true
		have += pairFindings(r)
	}
	for _, s := range selected {
		ft := rewardmodels.FeedbackTrace(s)
		n := len(feedback.Targets(ft))
		total += n
		switch r, ok := st.Reusable(s.ID, s.Revision, feedback.InputHash(ft), st.Plan.Model, hash); {
		case recorded[s.ID]:
			done += n
		case ok:
			cp := r.RewardModelFeedbackExtractedV1
			cp.Attempt, cp.WorkerID, cp.ReusedFrom, cp.Usage = cmd.Attempt, cmd.WorkerID, r.EventID, []events.LLMUsage{}
			reused = append(reused, recordEvents(stream, st.OwnerID, cp)...)
			have += pairFindings(cp)
			done += n
		default:
			in.Traces = append(in.Traces, ft)
		}
	}
	in.PairsNeeded = max(0, st.Requested.MaxPairs-have)
	raw, err := json.Marshal(in)
	if err != nil {
		return ExtractionClaim{}, err
	}
	key := jobs.ExtractionInputsKey(st.OwnerID, st.ID, cmd.Attempt)
	if err := c.store.Blobs().Put(ctx, key, raw); err != nil {
		return ExtractionClaim{}, fmt.Errorf("store the extraction inputs: %w", err)
	}
	started := events.RewardModelExtractionStartedV1{ModelID: st.ID, Attempt: cmd.Attempt, WorkerID: cmd.WorkerID, LeaseSeconds: int(cmd.Lease / time.Second),
		ClassifierModel: st.Plan.Model, PromptVersion: feedback.PromptVersion, TargetsTotal: total, InputsKey: key}
	evs := []events.New{{ID: newID(), Stream: stream, OwnerID: st.OwnerID, Type: events.RewardModelExtractionStarted, Payload: started}}
	evs = append(evs, reused...)
	if done > 0 {
		evs = append(evs, events.New{ID: newID(), Stream: stream, OwnerID: st.OwnerID, Type: events.RewardModelExtractionProgressed,
			Payload: events.RewardModelExtractionProgressedV1{ModelID: st.ID, Attempt: cmd.Attempt, WorkerID: cmd.WorkerID, TargetsDone: done}})
	}
	r, err := c.append(ctx, workerActor(cmd.WorkerID), map[string]int64{stream: st.Version}, evs)
	if err != nil {
		return ExtractionClaim{}, err
	}
	return ExtractionClaim{Result: r, ExtractionClaim: jobs.ExtractionClaim{ModelID: st.ID, OwnerID: st.OwnerID, InputsKey: key, ClassifierModel: st.Plan.Model,
		Attempt: cmd.Attempt, LeaseSeconds: started.LeaseSeconds, TargetsTotal: total, TargetsDone: done}}, nil
}
