package jobs

// TopicScoreBatch carries background scoring's batches (spec 001 "Learned
// action credit"): up to eight traces one worker scores with one loaded
// checkpoint, each trace's result reported as soon as it exists.
const TopicScoreBatch = "critic.jobs.score_batch"

// KindScoreBatch is a background scoring batch (spec 001 "Learned action
// credit").
var KindScoreBatch = register("score_batch", TopicScoreBatch)

// ScoreBatchJob is a critic.jobs.score_batch value (key = batch id).
type ScoreBatchJob struct {
	BatchID string `json:"batch_id"`
	ModelID string `json:"model_id"`
	OwnerID string `json:"owner_id,omitempty"`
}

// JobID implements Message.
func (m ScoreBatchJob) JobID() string {
	if m.ModelID == "" {
		return ""
	}
	return m.BatchID
}

// ScoreBatchRun is one trace of a claimed batch: its run and the blob of
// its ScoringItems.
type ScoreBatchRun struct {
	TraceID  string `json:"trace_id"`
	RunID    string `json:"run_id"`
	ItemsKey string `json:"items_key"`
}

// ScoreBatchClaim is the answer to a batch's claim: the runs it started
// (those still queued under the batch's run ids; a run an explicit request
// superseded is not among them).
type ScoreBatchClaim struct {
	ModelID string          `json:"model_id"`
	Runs    []ScoreBatchRun `json:"runs"`
}

// ScoreBatchReport is one trace's result, reported (jobs.Report) as soon as
// it is scored: its scores, or Error when that trace failed.
type ScoreBatchReport struct {
	TraceID string `json:"trace_id"`
	RunID   string `json:"run_id"`
	ScoringFinished
	Error string `json:"error,omitempty"`
}
