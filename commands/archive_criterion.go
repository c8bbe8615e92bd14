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
func (c *Commands) ArchiveCriterion(ctx context.Context, actor Actor, criterionID string) (Result, error) {
	return c.onCriteria(ctx, actor, func(st criteria.State) (string, any, error) {
		p, changed, err := criteria.DecideArchive(st, criterionID)
		if err != nil || !changed {
			return "", nil, err
		}
		return events.CriterionArchived, p, nil
	})
}
