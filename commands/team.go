package commands

import (
	"context"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/members"
)

// loadTeam folds an account's members stream over its implicit admin and
// returns the stream's version (0 when it has no events).
func (c *Streams) loadTeam(ctx context.Context, accountID string) (*members.Team, int64, error) {
	user, stream := events.UserStream(accountID), events.MembersStream(accountID)
	loaded, err := c.store.LoadStreams(ctx, []string{user, stream})
	if err != nil {
		return nil, 0, err
	}
	if len(loaded[user]) == 0 || loaded[user][0].Type != events.UserCreated {
		return nil, 0, domain.NotFound("user", accountID)
	}
	var created events.UserCreatedV1
	if err := loaded[user][0].Decode(&created); err != nil {
		return nil, 0, err
	}
	evs := loaded[stream]
	team, err := members.Fold(accountID, created.Name, evs)
	if err != nil {
		return nil, 0, err
	}
	var version int64
	if len(evs) > 0 {
		version = evs[len(evs)-1].Version
	}
	return team, version, nil
}

// Team is an account's members as its stream says now, removed members
// included: who is behind an annotation or an adjudication (critic audit
// model names them).
// It folds the team's stream because the audit reads the log, not a
// read model that may lag or be rebuilt.
func (c *Streams) Team(ctx context.Context, accountID string) (*members.Team, error) {
	team, _, err := c.loadTeam(ctx, accountID)
	return team, err
}
