package dispatch

import (
	"context"

	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/rewardmodels"
)

// extractJob is the job for a queued model whose attempt extracts feedback
// and has no dataset yet (ok false otherwise: build the dataset directly).
func (d *Dispatcher) extractJob(ctx context.Context, modelID, ownerID string) (jobs.ExtractJob, bool, error) {
	st, err := d.cmds.Streams.Model(ctx, modelID)
	if err != nil {
		return jobs.ExtractJob{}, false, err
	}
	if st.Status != rewardmodels.StatusQueued || st.Dataset != nil || !st.NeedsExtraction() || st.ExtractionDone() {
		return jobs.ExtractJob{}, false, nil
	}
	return jobs.ExtractJob{ModelID: st.ID, Attempt: st.Attempt, OwnerID: ownerID}, true, nil
}
