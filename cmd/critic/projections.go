package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/projections"
)

const projectionsUsage = "usage: critic projections status | critic projections retry EVENT_ID|all | critic projections skip EVENT_ID --reason TEXT"

// cmdProjections is the operator's view of the projections: how far each
// has come, and the events parked because they could not be applied (each
// holds back its owner's later events in that projection until retried).
func cmdProjections(ctx context.Context, args []string) error {
	if len(args) > 0 && args[0] == "skip" {
		return cmdProjectionsSkip(ctx, args[1:])
	}
	if len(args) == 0 || (args[0] != "status" && args[0] != "retry") || (args[0] == "retry" && len(args) != 2) || (args[0] == "status" && len(args) != 1) {
		return usageError{projectionsUsage}
	}
	in, err := boot(ctx)
	if err != nil {
		return err
	}
	defer in.Close()
	if args[0] == "status" {
		return printProjectionStatus(ctx, in)
	}
	ids := []string{args[1]}
	if args[1] == "all" {
		_, parked, err := projections.Status(ctx, in.pool)
		if err != nil {
			return err
		}
		ids = ids[:0]
		for _, p := range parked {
			ids = append(ids, p.EventID)
		}
		if len(ids) == 0 {
			fmt.Println("no parked events")
			return nil
		}
	}
	for _, id := range ids {
		n, err := projections.RequestRetry(ctx, in.pool, id)
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("event %s is not parked by any projection (see `critic projections status`)", id)
		}
	}
	// The running projections retry within a second or so; report what
	// they made of it.
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, parked, err := projections.Status(ctx, in.pool)
		if err != nil {
			return err
		}
		pending, failed := 0, 0
		for _, p := range parked {
			if !slices.Contains(ids, p.EventID) {
				continue
			}
			if p.RetryRequested {
				pending++
			} else {
				failed++
				fmt.Printf("%s: event %s failed again: %s\n", p.Projection, p.EventID, p.Error)
			}
		}
		if pending == 0 {
			if failed > 0 {
				return fmt.Errorf("%d parked event(s) still fail; fix the cause and retry again", failed)
			}
			fmt.Printf("retried %d event(s): applied, and their owners' held events caught up\n", len(ids))
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the retry is requested but no running projection picked it up within a minute; is `critic serve` (or `critic run`) running against this database?")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func printProjectionStatus(ctx context.Context, in *infra) error {
	pos, parked, err := projections.Status(ctx, in.pool)
	if err != nil {
		return err
	}
	last, err := in.store.Head(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "log\tlast seq %d\n\n", last)
	fmt.Fprintln(tw, "PROJECTION\tPOSITION\tLAG\tPARKED\tUPDATED")
	count := map[string]int{}
	for _, p := range parked {
		count[p.Projection]++
	}
	for _, p := range pos {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\n", p.Projection, p.Seq, p.Lag, count[p.Projection], p.UpdatedAt.UTC().Format(time.RFC3339))
	}
	if len(parked) > 0 {
		fmt.Fprintln(tw, "\nPARKED EVENT\tPROJECTION\tSEQ\tTYPE\tOWNER\tATTEMPTS\tPARKED AT\tERROR")
		for _, p := range parked {
			e := p.Error
			if p.RetryRequested {
				e = "(retry requested) " + e
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%d\t%s\t%s\n", p.EventID, p.Projection, p.Seq, p.EventType, p.OwnerID, p.Attempts,
				p.ParkedAt.UTC().Format(time.RFC3339), e)
		}
	}
	return tw.Flush()
}

// cmdProjectionsSkip is `critic projections skip EVENT_ID --reason TEXT`:
// the way out for a parked event that can never apply (retrying it fails
// whatever the operator fixes). It records projection.event_skipped; every
// projection then passes over the event and applies the owner's held
// events, and replays leave it out, so the read model and a replay agree.
func cmdProjectionsSkip(ctx context.Context, args []string) error {
	var id, reason string
	haveReason := false
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--reason" && i+1 < len(args):
			reason, haveReason = args[i+1], true
			i++
		case strings.HasPrefix(a, "--reason="):
			reason, haveReason = strings.TrimPrefix(a, "--reason="), true
		case id == "" && !strings.HasPrefix(a, "-"):
			id = a
		default:
			return usageError{projectionsUsage}
		}
	}
	if id == "" || !haveReason {
		return usageError{projectionsUsage}
	}
	in, err := boot(ctx)
	if err != nil {
		return err
	}
	defer in.Close()
	parkedBy := func() ([]projections.Parked, error) {
		_, parked, err := projections.Status(ctx, in.pool)
		return slices.DeleteFunc(parked, func(p projections.Parked) bool { return p.EventID != id }), err
	}
	before, err := parkedBy()
	if err != nil {
		return err
	}
	if len(before) == 0 {
		return fmt.Errorf("event %s is not parked by any projection (see `critic projections status`); only a parked event can be skipped", id)
	}
	if _, err := commands.New(in.store).SkipProjectionEvent.Handle(ctx, commands.SkipProjectionEvent{EventID: id, Reason: reason}); err != nil {
		return err
	}
	fmt.Printf("recorded the skip of event %s (%s, owner %s): %s\n", id, before[0].EventType, before[0].OwnerID, strings.TrimSpace(reason))
	// The running projections act on the skip as it reaches them.
	deadline := time.Now().Add(60 * time.Second)
	for {
		left, err := parkedBy()
		if err != nil {
			return err
		}
		if len(left) == 0 {
			fmt.Printf("skipped: %d projection(s) passed over it and applied the owner's held events\n", len(before))
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the skip is recorded but %s still holds the event after a minute; is `critic serve` (or `critic run`) running against this database? It applies the skip when it starts", left[0].Projection)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
