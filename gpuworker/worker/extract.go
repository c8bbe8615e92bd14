package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/gpuworker/extract"
)

// TopicExtract carries feedback-extraction jobs (domain/jobs).
const TopicExtract = jobs.TopicExtract

// ExtractMessage is a critic.jobs.extract value (domain/jobs).
type ExtractMessage = jobs.ExtractJob

// HandleExtract runs one extraction job: claim, read the inputs, call the
// feedback model, report each trace's findings, finish. A worker without a
// feedback model fails the extraction with what to set rather than leave
// the model queued. A claim another live worker holds is skipped (the
// lease sweep republishes it if that worker dies); a worker stopped mid-job
// hands the extraction back. It returns false only when ctx ended mid-job.
func (w *Worker) HandleExtract(ctx context.Context, payload []byte) bool {
	var m ExtractMessage
	if err := json.Unmarshal(payload, &m); err != nil || !safeID(m.ModelID) || m.Attempt < 1 {
		w.log.Error("dropping malformed extract message", "payload", truncate(string(payload), 300), "error", err)
		return true
	}
	log := w.log.With("job", "extract", "model_id", m.ModelID, "attempt", m.Attempt)
	claim, err := retry(ctx, 0, log, "claiming extraction", func(ctx context.Context) (*ExtractionClaim, error) {
		return w.client.ClaimExtraction(ctx, m.ModelID, m.Attempt)
	})
	var ae *APIError
	switch {
	case ctx.Err() != nil:
		return false
	case errors.As(err, &ae) && ae.Code == rewardmodels.ExtractionHeld:
		// Another worker's lease is live (this is a redelivery after that
		// worker let the partition go): skip it. Should that worker die, the
		// API's lease sweep requeues the extraction and publishes it again.
		log.Info("skipping extraction job: another worker holds its lease", "detail", ae.Detail)
		return true
	case errors.Is(err, ErrNotClaimable):
		log.Info("skipping extraction job: not claimable (a duplicate or stale delivery)", "detail", err.Error())
		return true
	case err != nil:
		log.Error("skipping extraction job: claim refused", "error", err)
		return true
	}
	log.Info("claimed extraction", "classifier_model", claim.ClassifierModel, "targets", claim.TargetsTotal, "reused", claim.TargetsDone)
	runErr := w.extract(ctx, claim)
	if ctx.Err() != nil && runErr != nil {
		w.handBack(ctx, log, "extraction (its recorded findings stay)", "the lease sweep requeues it once its lease has run out", func(ctx context.Context, reason string) error {
			return w.client.ExtractionHandBack(ctx, m.ModelID, m.Attempt, reason)
		})
		return false
	}
	msg := ""
	if runErr != nil {
		msg = runErr.Error()
		log.Error("extraction failed", "error", runErr)
	}
	_, err = retry(ctx, w.cfg.ReportRetryFor, log, "finishing extraction", func(ctx context.Context) (struct{}, error) {
		return struct{}{}, w.client.ExtractionFinished(ctx, m.ModelID, m.Attempt, msg)
	})
	if err != nil {
		log.Error("could not report the end of the extraction", "error", err)
	}
	return true
}

func (w *Worker) extract(ctx context.Context, claim *ExtractionClaim) error {
	if w.cfg.Feedback == nil {
		reason := w.cfg.FeedbackUnavailable
		if reason == "" {
			reason = "set CRITIC_FEEDBACK_MODEL and its provider's API key on the worker"
		}
		return fmt.Errorf("this worker has no feedback model: %s", reason)
	}
	if got := w.cfg.Feedback.Model().String(); got != claim.ClassifierModel {
		return fmt.Errorf("the model was queued for feedback model %s but this worker runs %s; set the same CRITIC_FEEDBACK_MODEL on the API and the workers, then retry", claim.ClassifierModel, got)
	}
	raw, err := w.cfg.Blobs.Get(ctx, claim.InputsKey)
	if err != nil {
		return fmt.Errorf("reading the extraction inputs %s: %w", claim.InputsKey, err)
	}
	var in jobs.ExtractionInputs
	if err := json.Unmarshal(raw, &in); err != nil {
		return fmt.Errorf("decoding the extraction inputs %s: %w", claim.InputsKey, err)
	}
	x := &extract.Extractor{LLM: w.cfg.Feedback, ProgressEvery: max(time.Duration(claim.LeaseSeconds)*time.Second/3, time.Second)}
	return x.Run(ctx, in, &serviceReporter{w: w, claim: claim, log: w.log}, claim.TargetsDone)
}

// serviceReporter reports through the worker service, retrying transient
// failures.
type serviceReporter struct {
	w     *Worker
	claim *ExtractionClaim
	log   *slog.Logger
}

func (r *serviceReporter) Record(ctx context.Context, rec events.RewardModelFeedbackExtractedV1) error {
	_, err := retry(ctx, r.w.cfg.ReportRetryFor, r.log, "reporting findings", func(ctx context.Context) (struct{}, error) {
		return struct{}{}, r.w.client.RecordFindings(ctx, r.claim.ModelID, rec)
	})
	return err
}

func (r *serviceReporter) Progress(ctx context.Context, done int) error {
	_, err := retry(ctx, r.w.cfg.ReportRetryFor, r.log, "reporting extraction progress", func(ctx context.Context) (struct{}, error) {
		return struct{}{}, r.w.client.ExtractionProgress(ctx, r.claim.ModelID, r.claim.Attempt, done)
	})
	return err
}
