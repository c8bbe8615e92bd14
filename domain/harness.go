package domain

// IsHarness reports whether the step was injected by the agent's harness
// (a slash command, its output, a hook's feedback, a compact summary) rather
// than said by the person: adapters mark such steps with metadata.harness, and
// titles, feedback extraction and reviewers must not take them for the user's
// words.
func (s Step) IsHarness() bool {
	h, _ := s.Metadata["harness"].(bool)
	return h
}
