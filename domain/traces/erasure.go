package traces

import "fmt"

// ErasedNotice is what a model's page and `critic audit model` say about
// the traces it was trained on that have been erased since (issue 37), in
// the words the shared evaluator's consent uses: erasure removes the data
// everywhere it is stored, but weights cannot unlearn it. Empty when none
// was erased.
func ErasedNotice(erased int) string {
	if erased == 0 {
		return ""
	}
	noun := "traces"
	if erased == 1 {
		noun = "trace"
	}
	return fmt.Sprintf("Trained on %d %s since erased. Weights cannot unlearn data they were trained on.", erased, noun)
}
