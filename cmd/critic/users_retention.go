package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	jobdispatch "github.com/criticml/critic/projections/dispatch"
	"github.com/criticml/critic/projections/readmodel"
)

const retentionUsage = "usage: critic users retention NAME DAYS|off [--dry-run]"

// usersRetention is `critic users retention NAME DAYS|off [--dry-run]`:
// sets the account's retention period and erases at once what it makes
// old (the daily sweep would anyway), or, with --dry-run, only says how
// many traces that would be and stores nothing.
func usersRetention(ctx context.Context, in *infra, cmds *commands.Commands, waiter *readmodel.Waiter, args []string) error {
	dry := false
	var pos []string
	for _, a := range args {
		if a == "--dry-run" {
			dry = true
			continue
		}
		pos = append(pos, a)
	}
	if len(pos) != 2 {
		return usageError{retentionUsage}
	}
	name := pos[0]
	var days *int
	if pos[1] != "off" {
		n, err := strconv.Atoi(pos[1])
		if err != nil {
			return usageError{retentionUsage + ": DAYS is a whole number of days or off, not " + strconv.Quote(pos[1])}
		}
		if err := domain.CheckRetentionDays(n); err != nil {
			return err
		}
		days = &n
	}
	id, err := userIDByName(ctx, in, name)
	if err != nil {
		return err
	}
	q := readmodel.NewQueries(in.pool)
	now := time.Now()
	if dry {
		if days == nil {
			fmt.Printf("dry run: retention off for %s erases nothing\n", name)
			return nil
		}
		cutoff := domain.RetentionCutoff(now, *days)
		n, err := q.CountExpiredTraces(ctx, id, cutoff)
		if err != nil {
			return err
		}
		fmt.Printf("dry run: %d traces of %s were last active before %s (older than %d days) and would be erased; nothing stored\n",
			n, name, cutoff.Format(time.RFC3339), *days)
		return nil
	}
	res, err := cmds.SetRetention.Handle(ctx, commands.SetRetention{Actor: commands.Actor{UserID: id}, Days: days})
	if err != nil {
		return err
	}
	settleCLI(ctx, waiter, res)
	if days == nil {
		fmt.Printf("retention off for %s: nothing will be erased by age\n", name)
		return nil
	}
	n, err := jobdispatch.EraseAccount(ctx, q, cmds, id, *days, now)
	fmt.Printf("retention for %s: traces older than %d days are erased daily; erased %d now (last active before %s)\n",
		name, *days, n, domain.RetentionCutoff(now, *days).Format(time.RFC3339))
	return err
}
