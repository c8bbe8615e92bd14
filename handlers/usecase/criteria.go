package usecase

import (
	"context"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain/criteria"
	"github.com/criticml/critic/projections/readmodel"
)

// DefineCriterion creates one of the caller's criteria and returns it once
// readable.
func (b Backend) DefineCriterion(ctx context.Context, caller *readmodel.Caller, in criteria.DefineInput) (*readmodel.Criterion, error) {
	res, err := b.Cmds.DefineCriterion.Handle(ctx, commands.DefineCriterion{Actor: Actor(caller), Definition: in})
	return settled(ctx, b, res.Result, err, func() (*readmodel.Criterion, error) {
		return b.Queries.GetCriterion(ctx, caller.UserID, res.CriterionID)
	})
}

// ChangeCriterion applies a PATCH to one of the caller's criteria and
// returns it once readable.
func (b Backend) ChangeCriterion(ctx context.Context, caller *readmodel.Caller, in criteria.ChangeInput) (*readmodel.Criterion, error) {
	res, err := b.Cmds.ChangeCriterion.Handle(ctx, commands.ChangeCriterion{Actor: Actor(caller), Change: in})
	return settled(ctx, b, res, err, func() (*readmodel.Criterion, error) {
		return b.Queries.GetCriterion(ctx, caller.UserID, in.CriterionID)
	})
}

// ArchiveCriterion archives one of the caller's criteria and returns once
// the read model shows it archived.
func (b Backend) ArchiveCriterion(ctx context.Context, caller *readmodel.Caller, id string) error {
	res, err := b.Cmds.ArchiveCriterion.Handle(ctx, commands.ArchiveCriterion{Actor: Actor(caller), CriterionID: id})
	return b.applied(ctx, res, err)
}

// SetGuidelines replaces the caller's guidelines and returns them once
// readable.
func (b Backend) SetGuidelines(ctx context.Context, caller *readmodel.Caller, markdown *string) (readmodel.Guidelines, error) {
	res, err := b.Cmds.SetGuidelines.Handle(ctx, commands.SetGuidelines{Actor: Actor(caller), Markdown: markdown})
	return settled(ctx, b, res, err, func() (readmodel.Guidelines, error) { return b.Queries.GetGuidelines(ctx, caller.UserID) })
}
