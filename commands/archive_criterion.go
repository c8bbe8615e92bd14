package commands

import (
	"context"

	"github.com/criticml/critic/domain/criteria"
	"github.com/criticml/critic/domain/events"
)

// ArchiveCriterion is DELETE /criteria/{id}: the criterion is no longer
// offered and takes no new values; the values it has stay in the traces'
// streams, so exports, SQL and models trained on it keep them. Archiving
// an archived criterion appends nothing.
type ArchiveCriterion struct {
	Actor       Actor
	CriterionID string
}

// ArchiveCriterionHandler runs ArchiveCriterion.
type ArchiveCriterionHandler struct{ *Streams }

func (c ArchiveCriterionHandler) Handle(ctx context.Context, cmd ArchiveCriterion) (Result, error) {
	return c.onCriteria(ctx, cmd.Actor, func(st criteria.State) (string, any, error) {
		p, changed, err := criteria.DecideArchive(st, cmd.CriterionID)
		if err != nil || !changed {
			return "", nil, err
		}
		return events.CriterionArchived, p, nil
	})
}
