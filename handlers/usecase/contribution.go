package usecase

import (
	"context"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain/traces"
	"github.com/criticml/critic/projections/readmodel"
)

// Contribution is a trace's consent to train the shared evaluator as the API
// answers it, with the notice a person must read (what opting in covers;
// that opting out cannot make released weights unlearn).
type Contribution struct {
	TraceID    string `json:"trace_id"`
	Contribute bool   `json:"contribute"`
	Notice     string `json:"notice"`
}

// SetContribution opts one of the caller's traces in or out and returns the
// consent once the read model shows it. Another owner's trace is not found.
func (b Backend) SetContribution(ctx context.Context, caller *readmodel.Caller, traceID string, contribute bool) (Contribution, error) {
	res, err := b.Cmds.SetContribution.Handle(ctx, commands.SetContribution{Actor: Actor(caller), TraceID: traceID, Contribute: contribute})
	if err := b.applied(ctx, res.Result, err); err != nil {
		return Contribution{}, err
	}
	return Contribution{TraceID: traceID, Contribute: res.Contribute, Notice: traces.ContributionNotice(res.Contribute)}, nil
}
