package dispatch

import (
	"context"

	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/rewardmodels"
)

// ExtractTopic carries feedback-extraction jobs (domain/jobs).
const ExtractTopic = jobs.TopicExtract

// ExtractJob asks a worker to extract one attempt's feedback (domain/jobs).
type ExtractJob = jobs.ExtractJob

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
