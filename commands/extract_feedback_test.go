package commands_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/feedback"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/platform/eventstore"
	"github.com/criticml/critic/platform/pg/pgtest"
)

func setupWith(t *testing.T, opts ...commands.Option) (*commands.Commands, *eventstore.Store, commands.Actor) {
	t.Helper()
	blobs, err := blob.NewLocal(t.TempDir())
	require.NoError(t, err)
	store := eventstore.New(pgtest.NewPool(t), blobs)
	cmds := commands.New(store, opts...)
	u, err := cmds.CreateUser.Handle(context.Background(), commands.CreateUser{Name: "u" + time.Now().Format("150405.000000")})
	require.NoError(t, err)
	return cmds, store, commands.Actor{UserID: u.UserID}
}

// conversations imports two traces whose only supervision is what the user
// said next, plus a comment.
func conversations(t *testing.T, cmds *commands.Commands, actor commands.Actor) []string {
	ctx := context.Background()
	res, err := cmds.ImportTraces.Handle(ctx, commands.ImportTraces{Actor: actor, Input: commands.ImportTracesInput{Format: "stash", Data: []byte(
		`{"id":"x","steps":[{"role":"user","content":"Sort 3,1,2"},{"role":"assistant","content":"3,2,1"},{"role":"user","content":"No, that's the wrong order."}]}` + "\n" +
			`{"id":"y","steps":[{"role":"user","content":"Sort b,a"},{"role":"assistant","content":"a,b"},{"role":"user","content":"Thanks, perfect."}]}`)}})
	require.NoError(t, err)
	return res.TraceIDs
}

func readInputs(t *testing.T, store *eventstore.Store, key string) jobs.ExtractionInputs {
	raw, err := store.Blobs().Get(context.Background(), key)
	require.NoError(t, err)
	var in jobs.ExtractionInputs
	require.NoError(t, json.Unmarshal(raw, &in))
	return in
}

// finding answers a target as a scripted classifier would and reviews it.
func finding(t *testing.T, tr feedback.Trace, label, quote, alt string) events.RewardModelFeedbackExtractedV1 {
	ts := feedback.Targets(tr)
	require.Len(t, ts, 1)
	tg := ts[0]
	id := tg.Evidence[0].ID
	f, review, _ := feedback.FromFeedback(tg, feedback.FeedbackAnswer{Label: label, Confidence: "high", About: "agent",
		EvidenceID: &id, EvidenceQuote: &quote, Alternative: &alt, Reason: "scripted"}, "openai/test", feedback.ConfigHash(feedback.DefaultCriteria))
	require.True(t, review)
	want := "B"
	if (label == "negative") != feedback.OriginalFirst(tg.TraceID, tg.StepID) {
		want = "A"
	}
	feedback.ApplyReview(&f, tg, feedback.ReviewAnswer{Preferred: want, Grounded: true})
	require.Equal(t, events.OutcomePair, f.Outcome)
	return events.RewardModelFeedbackExtractedV1{Attempt: 1, TraceID: tr.ID, TraceRevision: tr.Revision, ClassifierModel: "openai/test",
		PromptVersion: feedback.PromptVersion, ConfigHash: feedback.ConfigHash(feedback.DefaultCriteria), Targets: 1,
		Findings: []events.Finding{f}, Usage: []events.LLMUsage{{Model: "openai/test", Calls: 2, InputTokens: 100, OutputTokens: 20}}}
}

func TestExtractionRecordsFindingsBeforeTheDataset(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cmds, store, actor := setupWith(t, commands.WithFeedbackModel("openai/test", ""))
	ids := conversations(t, cmds, actor)
	req, err := cmds.RequestTraining.Handle(ctx, commands.RequestTraining{Actor: actor, Input: commands.RequestTrainingInput{Name: "m", TraceIDs: ids}})
	require.NoError(t, err)

	// The dataset waits for the extraction worker.
	_, err = cmds.BuildDataset.Handle(ctx, commands.BuildDataset{ModelID: req.ModelID})
	require.NoError(t, err)
	m, err := cmds.Streams.Model(ctx, req.ModelID)
	require.NoError(t, err)
	require.Nil(t, m.Dataset)
	require.True(t, m.NeedsExtraction())

	claim, err := cmds.ClaimExtraction.Handle(ctx, commands.ClaimExtraction{WorkerID: "w1", ModelID: req.ModelID, Attempt: 1, Lease: time.Minute})
	require.NoError(t, err)
	require.Equal(t, 2, claim.TargetsTotal)
	_, err = cmds.ClaimExtraction.Handle(ctx, commands.ClaimExtraction{WorkerID: "w2", ModelID: req.ModelID, Attempt: 1, Lease: time.Minute})
	var conflict *domain.ConflictError
	require.ErrorAs(t, err, &conflict, "another worker holds the live claim")
	in := readInputs(t, store, claim.InputsKey)
	require.Len(t, in.Traces, 2)
	require.Equal(t, 4000, in.PairsNeeded)

	neg := finding(t, in.Traces[0], "negative", "wrong order", "1,2,3")
	pos := finding(t, in.Traces[1], "positive", "perfect", "b,a")

	// A forged quote is refused and nothing is appended.
	forged := neg
	forged.Findings = append([]events.Finding(nil), neg.Findings...)
	q := "the user loved it"
	forged.Findings[0].EvidenceQuote = &q
	_, err = cmds.RecordFeedback.Handle(ctx, commands.RecordFeedback{WorkerID: "w1", ModelID: req.ModelID, Feedback: forged})
	var invalid *domain.ValidationError
	require.ErrorAs(t, err, &invalid)
	require.Contains(t, err.Error(), "does not occur verbatim")
	// Only the holder reports.
	_, err = cmds.RecordFeedback.Handle(ctx, commands.RecordFeedback{WorkerID: "w2", ModelID: req.ModelID, Feedback: neg})
	require.ErrorAs(t, err, &conflict)

	_, err = cmds.RecordFeedback.Handle(ctx, commands.RecordFeedback{WorkerID: "w1", ModelID: req.ModelID, Feedback: neg})
	require.NoError(t, err)
	_, err = cmds.RecordFeedback.Handle(ctx, commands.RecordFeedback{WorkerID: "w1", ModelID: req.ModelID, Feedback: neg})
	require.ErrorAs(t, err, &conflict, "one record per trace and attempt")
	_, err = cmds.RecordFeedback.Handle(ctx, commands.RecordFeedback{WorkerID: "w1", ModelID: req.ModelID, Feedback: pos})
	require.NoError(t, err)
	_, err = cmds.FinishExtraction.Handle(ctx, commands.FinishExtraction{WorkerID: "w1", ModelID: req.ModelID, Attempt: 1})
	require.NoError(t, err)
	// Every finding is an event of its own, before its trace's record.
	stream := events.RewardModelStream(req.ModelID)
	loaded, err := store.LoadStreams(ctx, []string{stream})
	require.NoError(t, err)
	var types []string
	for _, e := range loaded[stream] {
		types = append(types, e.Type)
	}
	require.Equal(t, []string{events.RewardModelRequested, events.RewardModelExtractionStarted,
		events.RewardModelFindingRecorded, events.RewardModelFeedbackExtracted,
		events.RewardModelFindingRecorded, events.RewardModelFeedbackExtracted, events.RewardModelExtractionFinished}, types)

	_, err = cmds.BuildDataset.Handle(ctx, commands.BuildDataset{ModelID: req.ModelID})
	require.NoError(t, err)
	m, err = cmds.Streams.Model(ctx, req.ModelID)
	require.NoError(t, err)
	require.NotNil(t, m.Dataset, "two finding pairs from two traces train")
	require.Equal(t, 2, m.Dataset.NumPairs)
	require.ElementsMatch(t, []string{neg.Findings[0].ID, pos.Findings[0].ID}, m.Dataset.IncludedFindings)
	dsIn, err := cmds.Streams.DatasetInputs(ctx, m, m.Dataset.AsOfSeq)
	require.NoError(t, err)
	ds, err := rewardmodels.BuildDatasetFrom(dsIn)
	require.NoError(t, err)
	require.Equal(t, "user: Sort 3,1,2\nassistant: 1,2,3", ds.Pairs[0].Chosen)
	require.Equal(t, "user: Sort 3,1,2\nassistant: 3,2,1", ds.Pairs[0].Rejected)
	require.Equal(t, events.FindingUserFeedback, ds.Pairs[0].Source)
	require.Equal(t, []rewardmodels.PairEvidence{{ID: *neg.Findings[0].EvidenceID, Quote: "wrong order"}}, ds.Pairs[0].Evidence)
	require.Equal(t, "user: Sort b,a\nassistant: a,b", ds.Pairs[1].Chosen, "a positive finding keeps the original as chosen")

	// A retry reuses the recorded findings instead of calling the model again.
	_, err = cmds.ClaimTraining.Handle(ctx, commands.ClaimTraining{WorkerID: "w1", ModelID: req.ModelID, Attempt: 1, Lease: time.Minute})
	require.NoError(t, err)
	_, err = cmds.FailTraining.Handle(ctx, commands.FailTraining{WorkerID: "w1", ModelID: req.ModelID, Attempt: 1, Message: "boom"})
	require.NoError(t, err)
	_, err = cmds.RetryTraining.Handle(ctx, commands.RetryTraining{Actor: actor, ModelID: req.ModelID})
	require.NoError(t, err)
	claim2, err := cmds.ClaimExtraction.Handle(ctx, commands.ClaimExtraction{WorkerID: "w2", ModelID: req.ModelID, Attempt: 2, Lease: time.Minute})
	require.NoError(t, err)
	require.Equal(t, 2, claim2.TargetsDone)
	require.Empty(t, readInputs(t, store, claim2.InputsKey).Traces, "nothing left to pay for")
	m, err = cmds.Streams.Model(ctx, req.ModelID)
	require.NoError(t, err)
	require.Len(t, m.Extracted, 2)
	require.NotEmpty(t, m.Extracted[0].ReusedFrom)
	require.Equal(t, neg.Findings[0].ID, m.Extracted[0].Findings[0].ID, "the reused record carries its findings")
	require.Empty(t, m.Extracted[0].Usage)

	// A new comment is new evidence: the next retry asks about that trace
	// again and reuses the other.
	_, err = cmds.FinishExtraction.Handle(ctx, commands.FinishExtraction{WorkerID: "w2", ModelID: req.ModelID, Attempt: 2})
	require.NoError(t, err)
	_, err = cmds.BuildDataset.Handle(ctx, commands.BuildDataset{ModelID: req.ModelID})
	require.NoError(t, err)
	_, err = cmds.ClaimTraining.Handle(ctx, commands.ClaimTraining{WorkerID: "w2", ModelID: req.ModelID, Attempt: 2, Lease: time.Minute})
	require.NoError(t, err)
	_, err = cmds.FailTraining.Handle(ctx, commands.FailTraining{WorkerID: "w2", ModelID: req.ModelID, Attempt: 2, Message: "boom"})
	require.NoError(t, err)
	note := "Descending was not what I asked for"
	_, err = cmds.AddAnnotation.Handle(ctx, commands.AddAnnotation{Actor: actor, Input: commands.AddAnnotationInput{TraceID: ids[0], StepID: in.Traces[0].Steps[1].ID, Comment: &note, AuthorName: "t"}})
	require.NoError(t, err)
	_, err = cmds.RetryTraining.Handle(ctx, commands.RetryTraining{Actor: actor, ModelID: req.ModelID})
	require.NoError(t, err)
	claim3, err := cmds.ClaimExtraction.Handle(ctx, commands.ClaimExtraction{WorkerID: "w2", ModelID: req.ModelID, Attempt: 3, Lease: time.Minute})
	require.NoError(t, err)
	in3 := readInputs(t, store, claim3.InputsKey)
	require.Len(t, in3.Traces, 1)
	require.Equal(t, ids[0], in3.Traces[0].ID)
	require.Equal(t, note, in3.Traces[0].Comments[0].Text)
}

func TestExtractionFailureKeepsTheReport(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cmds, store, actor := setupWith(t, commands.WithFeedbackModel("openai/test", ""))
	ids := conversations(t, cmds, actor)
	req, err := cmds.RequestTraining.Handle(ctx, commands.RequestTraining{Actor: actor, Input: commands.RequestTrainingInput{Name: "m", TraceIDs: ids}})
	require.NoError(t, err)
	claim, err := cmds.ClaimExtraction.Handle(ctx, commands.ClaimExtraction{WorkerID: "w1", ModelID: req.ModelID, Attempt: 1, Lease: time.Minute})
	require.NoError(t, err)
	in := readInputs(t, store, claim.InputsKey)
	_, err = cmds.RecordFeedback.Handle(ctx, commands.RecordFeedback{WorkerID: "w1", ModelID: req.ModelID, Feedback: finding(t, in.Traces[0], "negative", "wrong order", "1,2,3")})
	require.NoError(t, err)
	_, err = cmds.FinishExtraction.Handle(ctx, commands.FinishExtraction{WorkerID: "w1", ModelID: req.ModelID, Attempt: 1, Error: "openai/test: HTTP 500 after 5 attempt(s)"})
	require.NoError(t, err)
	m, err := cmds.Streams.Model(ctx, req.ModelID)
	require.NoError(t, err)
	require.Equal(t, rewardmodels.StatusFailed, m.Status)
	require.True(t, m.FeedbackRecorded(), "the findings recorded before the failure stay")
	require.Contains(t, m.Error, "feedback extraction failed: openai/test: HTTP 500")
	require.Len(t, m.Extracted, 1)
}

func TestWithoutAProviderCommentsOnlyFailsNamingTheVariable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cmds, _, actor := setupWith(t, commands.WithFeedbackModel("", "CRITIC_FEEDBACK_MODEL is anthropic/claude-sonnet-4-5: no Anthropic API key is configured; set ANTHROPIC_API_KEY"))
	ids := conversations(t, cmds, actor)
	req, err := cmds.RequestTraining.Handle(ctx, commands.RequestTraining{Actor: actor, Input: commands.RequestTrainingInput{Name: "m", TraceIDs: ids}})
	require.NoError(t, err)
	require.Equal(t, "", req.Requested.FeedbackPlan.Model)
	_, err = cmds.BuildDataset.Handle(ctx, commands.BuildDataset{ModelID: req.ModelID})
	require.NoError(t, err)
	m, err := cmds.Streams.Model(ctx, req.ModelID)
	require.NoError(t, err)
	require.Equal(t, rewardmodels.StatusFailed, m.Status)
	require.False(t, m.FeedbackRecorded())
	require.Contains(t, m.Error, "set ANTHROPIC_API_KEY", "comments only: the failure says what to set, not just too few pairs")
	_, err = cmds.ClaimExtraction.Handle(ctx, commands.ClaimExtraction{WorkerID: "w1", ModelID: req.ModelID, Attempt: 1, Lease: time.Minute})
	var conflict *domain.ConflictError
	require.ErrorAs(t, err, &conflict, "nothing to extract without a provider")
}

func TestTrainingConfigIsChecked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cmds, _, actor := setupWith(t)
	ids := conversations(t, cmds, actor)
	str := func(s string) *string { return &s }
	num := func(n int) *int { return &n }
	for field, cfg := range map[string]*commands.TrainingConfig{
		"training_config.annotation_source": {AnnotationSource: str("graded-by-hand")},
		"training_config.input_version":     {InputVersion: num(2)},
		"training_config.criteria":          {CriteriaSet: true},
		"training_config.criteria[1]":       {Criteria: []string{"ok", " "}, CriteriaSet: true},
	} {
		_, err := cmds.RequestTraining.Handle(ctx, commands.RequestTraining{Actor: actor, Input: commands.RequestTrainingInput{Name: "m", TraceIDs: ids, Config: cfg}})
		var invalid *domain.ValidationError
		require.ErrorAs(t, err, &invalid, field)
		require.Equal(t, field, invalid.Field)
	}
	res, err := cmds.RequestTraining.Handle(ctx, commands.RequestTraining{Actor: actor, Input: commands.RequestTrainingInput{Name: "m", TraceIDs: ids,
		Config: &commands.TrainingConfig{AnnotationSource: str("explicit"), InputVersion: num(3), Criteria: []string{"be brief"}, CriteriaSet: true}}})
	require.NoError(t, err)
	require.Equal(t, events.TrainingConfig{AnnotationSource: "explicit", InputVersion: 3, Criteria: []string{"be brief"}, ThinkingExcluded: true}, *res.Requested.TrainingConfig)
	require.Nil(t, res.Requested.FeedbackPlan, "explicit trains on ratings only")
}

// TestAHandedBackOrExpiredExtractionContinuesWithItsFindings: a stopping
// worker hands its extraction back (only the holder may), another worker's
// claim then succeeds at once and starts after the trace already recorded;
// when that worker dies, the expired lease is requeued the same way (a live
// one is not), and the findings still stay.
func TestAHandedBackOrExpiredExtractionContinuesWithItsFindings(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cmds, store, actor := setupWith(t, commands.WithFeedbackModel("openai/test", ""))
	ids := conversations(t, cmds, actor)
	req, err := cmds.RequestTraining.Handle(ctx, commands.RequestTraining{Actor: actor, Input: commands.RequestTrainingInput{Name: "m", TraceIDs: ids}})
	require.NoError(t, err)
	claim, err := cmds.ClaimExtraction.Handle(ctx, commands.ClaimExtraction{WorkerID: "w1", ModelID: req.ModelID, Attempt: 1, Lease: time.Minute})
	require.NoError(t, err)
	in := readInputs(t, store, claim.InputsKey)
	_, err = cmds.RecordFeedback.Handle(ctx, commands.RecordFeedback{WorkerID: "w1", ModelID: req.ModelID, Feedback: finding(t, in.Traces[0], "negative", "wrong order", "1,2,3")})
	require.NoError(t, err)

	var conflict *domain.ConflictError
	_, err = cmds.HandBackExtraction.Handle(ctx, commands.HandBackExtraction{WorkerID: "w2", ModelID: req.ModelID, Attempt: 1, Reason: "stopping"})
	require.ErrorAs(t, err, &conflict, "only the holder hands back")
	_, err = cmds.HandBackExtraction.Handle(ctx, commands.HandBackExtraction{WorkerID: "w1", ModelID: req.ModelID, Attempt: 1, Reason: "worker w1 is shutting down"})
	require.NoError(t, err)
	m, err := cmds.Streams.Model(ctx, req.ModelID)
	require.NoError(t, err)
	require.Equal(t, rewardmodels.StatusQueued, m.Status)
	require.Nil(t, m.Extraction, "nobody holds it")
	require.Len(t, m.Extracted, 1, "the recorded findings stay")
	_, err = cmds.FinishExtraction.Handle(ctx, commands.FinishExtraction{WorkerID: "w1", ModelID: req.ModelID, Attempt: 1})
	require.ErrorAs(t, err, &conflict, "the worker that handed it back holds nothing")

	claim2, err := cmds.ClaimExtraction.Handle(ctx, commands.ClaimExtraction{WorkerID: "w2", ModelID: req.ModelID, Attempt: 1, Lease: time.Second})
	require.NoError(t, err, "claimed at once, not after w1's lease")
	require.Equal(t, 1, claim2.TargetsDone, "the recorded trace is not asked again")
	require.Len(t, readInputs(t, store, claim2.InputsKey).Traces, 1)

	res, err := cmds.ExpireExtractionLease.Handle(ctx, commands.ExpireExtractionLease{ModelID: req.ModelID, Now: time.Now()})
	require.NoError(t, err)
	require.Empty(t, res.LastEventID, "a live lease is not expired")
	res, err = cmds.ExpireExtractionLease.Handle(ctx, commands.ExpireExtractionLease{ModelID: req.ModelID, Now: time.Now().Add(time.Minute)})
	require.NoError(t, err)
	require.NotEmpty(t, res.LastEventID)
	m, err = cmds.Streams.Model(ctx, req.ModelID)
	require.NoError(t, err)
	require.Nil(t, m.Extraction)
	require.Len(t, m.Extracted, 1)
	loaded, err := store.LoadStreams(ctx, []string{events.RewardModelStream(req.ModelID)})
	require.NoError(t, err)
	var reasons []string
	for _, e := range loaded[events.RewardModelStream(req.ModelID)] {
		if e.Type == events.RewardModelExtractionRequeued {
			var p events.RewardModelExtractionRequeuedV1
			require.NoError(t, json.Unmarshal(e.Payload, &p))
			reasons = append(reasons, p.Reason+" "+p.WorkerID)
		}
	}
	require.Equal(t, []string{"handed_back w1", "lease_expired w2"}, reasons)
	claim3, err := cmds.ClaimExtraction.Handle(ctx, commands.ClaimExtraction{WorkerID: "w3", ModelID: req.ModelID, Attempt: 1, Lease: time.Second})
	require.NoError(t, err)
	require.Equal(t, 1, claim3.TargetsDone)

	// The hand-back was no lost run; w2 was the first. w3 dying is the
	// second (requeued), w4 dying the third: the model fails, saying why.
	res, err = cmds.ExpireExtractionLease.Handle(ctx, commands.ExpireExtractionLease{ModelID: req.ModelID, Now: time.Now().Add(time.Minute)})
	require.NoError(t, err)
	require.NotEmpty(t, res.LastEventID)
	m, err = cmds.Streams.Model(ctx, req.ModelID)
	require.NoError(t, err)
	require.Equal(t, rewardmodels.StatusQueued, m.Status, "two lost runs: still queued")
	require.Len(t, m.Lost, 2)
	_, err = cmds.ClaimExtraction.Handle(ctx, commands.ClaimExtraction{WorkerID: "w4", ModelID: req.ModelID, Attempt: 1, Lease: time.Second})
	require.NoError(t, err)
	res, err = cmds.ExpireExtractionLease.Handle(ctx, commands.ExpireExtractionLease{ModelID: req.ModelID, Now: time.Now().Add(time.Minute)})
	require.NoError(t, err)
	require.NotEmpty(t, res.LastEventID)
	m, err = cmds.Streams.Model(ctx, req.ModelID)
	require.NoError(t, err)
	require.Equal(t, rewardmodels.StatusFailed, m.Status, "the third lost run fails the model")
	lines := strings.Split(m.Error, "\n")
	require.Equal(t, "training failed: the worker was lost 3 times (lease expired each time); retry the model once the workers are healthy", lines[0])
	require.Len(t, lines, 4)
	for i, w := range []string{"w2", "w3", "w4"} {
		require.True(t, strings.HasPrefix(lines[i+1], fmt.Sprintf("run %d: worker %s sent no feedback-extraction heartbeat", i+1, w)), lines[i+1])
	}
	res, err = cmds.ExpireExtractionLease.Handle(ctx, commands.ExpireExtractionLease{ModelID: req.ModelID, Now: time.Now().Add(time.Hour)})
	require.NoError(t, err)
	require.Empty(t, res.LastEventID, "a failed model's extraction is not requeued")
}
