package worker

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/gpuworker/extract"
)

// extraction runs one feedback-extraction job: read the inputs, call the
// feedback model, report each trace's findings, finish. A worker without a
// feedback model fails the extraction with what to set rather than leave
// the model queued. A claim another live worker holds is skipped (the
// lease sweep republishes it if that worker dies); a worker stopped mid-job
// hands the extraction back, and its findings stay for the next worker.
var extraction = register(Kind[jobs.ExtractJob, jobs.ExtractionClaim, struct{}]{
	Kind: jobs.KindExtract, What: "extraction", IDKey: "model_id", HandBack: true,
	Claimed: func(c jobs.ExtractionClaim) []any {
		return []any{"attempt", c.Attempt, "classifier_model", c.ClassifierModel, "targets", c.TargetsTotal, "reused", c.TargetsDone}
	},
	Fail: func(j *Job[jobs.ExtractionClaim], err error) (string, any) {
		j.Log.Error("extraction failed", "error", err)
		return err.Error(), nil
	},
	Work: func(ctx context.Context, j *Job[jobs.ExtractionClaim]) (struct{}, error) {
		w, claim := j.w, j.Args
		if w.cfg.Feedback == nil {
			reason := cmp.Or(w.cfg.FeedbackUnavailable, "set CRITIC_FEEDBACK_MODEL and its provider's API key on the worker")
			return struct{}{}, fmt.Errorf("this worker has no feedback model: %s", reason)
		}
		if got := w.cfg.Feedback.Model().String(); got != claim.ClassifierModel {
			return struct{}{}, fmt.Errorf("the model was queued for feedback model %s but this worker runs %s; set the same CRITIC_FEEDBACK_MODEL on the API and the workers, then retry", claim.ClassifierModel, got)
		}
		var in jobs.ExtractionInputs
		if err := w.readJSON(ctx, "extraction inputs", claim.InputsKey, &in); err != nil {
			return struct{}{}, err
		}
		x := &extract.Extractor{LLM: w.cfg.Feedback, ProgressEvery: max(time.Duration(claim.LeaseSeconds)*time.Second/3, time.Second)}
		return struct{}{}, x.Run(ctx, in, reporter{j}, claim.TargetsDone)
	},
})

// reporter reports an extraction's findings and progress through its job.
type reporter struct{ j *Job[jobs.ExtractionClaim] }

func (r reporter) Record(ctx context.Context, rec events.RewardModelFeedbackExtractedV1) error {
	return r.j.Report(ctx, rec, nil)
}

func (r reporter) Progress(ctx context.Context, done int) error {
	return r.j.Beat(ctx, jobs.ExtractionProgress{TargetsDone: done})
}
