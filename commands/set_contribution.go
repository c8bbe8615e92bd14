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
type SetContribution struct {
	Actor      Actor
	TraceID    string
	Contribute bool
}

// SetContributionHandler runs SetContribution.
type SetContributionHandler struct{ *Streams }

func (c SetContributionHandler) Handle(ctx context.Context, cmd SetContribution) (ContributionResult, error) {
	out := ContributionResult{TraceID: cmd.TraceID, Contribute: cmd.Contribute}
	r, err := c.onTrace(ctx, cmd.Actor, cmd.TraceID, func(st traces.State) (string, any, error) {
		ev, changed := traces.DecideContribution(st, cmd.Contribute, events.ContributionViaAPI)
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
