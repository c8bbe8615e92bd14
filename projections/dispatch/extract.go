package dispatch

import (
	"context"

	"github.com/criticml/critic/domain/rewardmodels"
)

// ExtractTopic carries feedback-extraction jobs to the worker tier: models
// that learn from comments, user reactions and AI judgments are extracted
// by a worker before their dataset is built (DESIGN §9: model calls never
// run in the API).
const ExtractTopic = "critic.jobs.extract"

// ExtractJob asks a worker to extract one attempt's feedback.
type ExtractJob struct {
	ModelID string `json:"model_id"`
	Attempt int    `json:"attempt"`
	OwnerID string `json:"owner_id"`
}

// extractJob is the job for a queued model whose attempt extracts feedback
// and has no dataset yet (ok false otherwise: build the dataset directly).
func (d *Dispatcher) extractJob(ctx context.Context, modelID, ownerID string) (ExtractJob, bool, error) {
	st, err := d.cmds.Model(ctx, modelID)
	if err != nil {
		return ExtractJob{}, false, err
	}
	if st.Status != rewardmodels.StatusQueued || st.Dataset != nil || !st.NeedsExtraction() || st.ExtractionDone() {
		return ExtractJob{}, false, nil
	}
	return ExtractJob{ModelID: st.ID, Attempt: st.Attempt, OwnerID: ownerID}, true, nil
}
