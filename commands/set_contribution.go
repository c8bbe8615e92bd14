package commands

import (
	"context"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/traces"
)

// ContributionResult is a trace's consent after PUT /traces/{id}/contribution.
type ContributionResult struct {
	Result
	TraceID    string
	Contribute bool
	// Changed is false when the trace already had this consent (no event).
	Changed bool
}

// SetContribution opts one of the actor's traces in or out of training the
// shared evaluator (trace.contribution_set). Setting the value it already
// has appends nothing.
func (c *Commands) SetContribution(ctx context.Context, actor Actor, traceID string, contribute bool) (ContributionResult, error) {
	out := ContributionResult{TraceID: traceID, Contribute: contribute}
	r, err := c.onTrace(ctx, actor, traceID, func(st traces.State) (string, any, error) {
		ev, changed := traces.DecideContribution(st, contribute, events.ContributionViaAPI)
		out.Changed = changed
		if !changed {
			return "", nil, nil
		}
		return events.TraceContributionSet, ev, nil
	})
	if err != nil {
		return ContributionResult{}, err
	}
	out.Result = r
	return out, nil
}
