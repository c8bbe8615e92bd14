package dispatch

import (
	"context"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/rewardmodels"
)

// publishExtract publishes the extraction job of a queued model whose
// attempt extracts feedback and has no dataset yet, for event e, and says
// whether it did (false for any other model: build the dataset directly).
func (d *Dispatcher) publishExtract(ctx context.Context, modelID string, e events.Envelope) (bool, error) {
	st, err := d.cmds.Streams.Model(ctx, modelID)
	if err != nil {
		return false, err
	}
	if st.Status != rewardmodels.StatusQueued || st.Dataset != nil || !st.NeedsExtraction() || st.ExtractionDone() {
		return false, nil
	}
	job := jobs.ExtractJob{ModelID: st.ID, Attempt: st.Attempt, OwnerID: e.OwnerID}
	return true, d.publish(jobs.TopicExtract, job.ModelID, e.CorrelationID, job)
}
