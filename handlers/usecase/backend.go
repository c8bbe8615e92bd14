package usecase

import (
	"context"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain/members"
	"github.com/criticml/critic/projections/readmodel"
)

// Backend is the command and query sides an API surface calls. Its methods
// are the operations REST and Connect share where an operation is more than
// one command or query call — required fields, defaults, lookups, fallbacks,
// read-your-writes — so both surfaces answer the same data and the same
// errors. Each surface keeps its own decoding; the role check happens before
// either runs (edge.Permit, from the route's or method's declared
// permission), so a caller who may not is refused whatever it sends.
type Backend struct {
	Cmds    *commands.Commands
	Queries *readmodel.Queries
	Waiter  *readmodel.Waiter
}

// Settle waits until the read model shows what a command appended, so a
// read right after a write sees it.
func (b Backend) Settle(ctx context.Context, r commands.Result) error {
	if r.LastEventID == "" {
		return nil
	}
	return b.Waiter.Wait(ctx, r.LastEventID)
}

// settled answers a write with what it wrote: err (the command's error) as
// it is, else read once the read model has applied the command's result.
func settled[T any](ctx context.Context, b Backend, res commands.Result, err error, read func() (T, error)) (T, error) {
	if err == nil {
		err = b.Settle(ctx, res)
	}
	if err != nil {
		var zero T
		return zero, err
	}
	return read()
}

// applied is Settle after a command: err (the command's error) as it is,
// else the wait for what the command appended.
func (b Backend) applied(ctx context.Context, res commands.Result, err error) error {
	if err != nil {
		return err
	}
	return b.Settle(ctx, res)
}

// Actor is the command actor of a caller.
func Actor(c *readmodel.Caller) commands.Actor {
	return commands.Actor{UserID: c.UserID, MemberID: c.MemberID, Moderates: c.Role.May(members.Manage)}
}
