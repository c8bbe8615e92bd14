package commands

// MaxBatchTraces is how many traces one background batch scores (spec 001
// "Learned action credit": up to eight traces, one loaded checkpoint).
const MaxBatchTraces = 8

// BackgroundBatch is what RequestBackgroundBatch appended: the batch (""
// when no trace was eligible any more) and its traces, and the traces
// left out because they have nothing to score.
type BackgroundBatch struct {
	Result
	BatchID   string
	TraceIDs  []string
	NoActions []string
}
