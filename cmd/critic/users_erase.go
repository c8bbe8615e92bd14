package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/user"
	"strings"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/projections/readmodel"
)

const usersEraseUsage = "usage: critic users erase NAME [--export DIR] [--yes] [--reason TEXT]"

// usersErase is `critic users erase NAME`: it shows what the account holds,
// offers the export (or writes it with --export DIR), asks for the account's
// name unless --yes, then erases the account (commands.EraseAccount) and
// waits for the read model to drop it.
func usersErase(ctx context.Context, in *infra, cmds *commands.Commands, waiter *readmodel.Waiter, args []string) error {
	fs := flag.NewFlagSet("users erase", flag.ContinueOnError)
	exportDir := fs.String("export", "", "write the account's export into this folder first")
	yes := fs.Bool("yes", false, "erase without asking for the account's name")
	reason := fs.String("reason", "account erased by an operator (critic users erase)", "why, recorded in account.erased")
	fs.SetOutput(io.Discard)
	pos, err := parseAnywhere(fs, args, usersEraseUsage)
	if err != nil {
		return err
	}
	if len(pos) != 1 || pos[0] == "" {
		return usageError{usersEraseUsage}
	}
	name := pos[0]
	id, err := userIDByName(ctx, in, name)
	if err != nil {
		return err
	}
	plan, err := cmds.Streams.PlanAccountErasure(ctx, id)
	if err != nil {
		return err
	}
	if plan.Erased {
		return fmt.Errorf("account %s (%s) is already erased", name, id)
	}
	fmt.Printf("erasing account %s (%s) erases for good:\n", name, id)
	fmt.Printf("  %d traces with their steps, blobs and %d annotations (ratings, comments, quotes)\n", plan.Traces, plan.Annotations)
	fmt.Printf("  %d reward models (checkpoints and datasets deleted; their events stay, unreadable)\n", plan.RewardModels)
	g := "no guidelines"
	if plan.Guidelines {
		g = "its guidelines"
	}
	fmt.Printf("  %d GEPA runs and their skills, %d criteria, %s\n", plan.GepaRuns, plan.Criteria, g)
	fmt.Printf("  %d members and %d active API keys (revoked: they get 401)\n", plan.Members, plan.APIKeys)
	if *exportDir != "" {
		m, err := exportAccountTo(ctx, in, cmds, waiter, id, name, *exportDir)
		if err != nil {
			return fmt.Errorf("not erased: %w", err)
		}
		printExport(os.Stdout, m, *exportDir)
	} else {
		fmt.Printf("nothing of it can be recovered: to keep a copy, run `critic users export %s DIR` first, or pass --export DIR\n", name)
	}
	if !*yes {
		fmt.Printf("type the account's name (%s) to erase it: ", name)
		line, err := bufio.NewReader(os.Stdin).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if got := strings.TrimSpace(line); got != name {
			if got == "" {
				return errors.New("not erased: no name typed (pass --yes to erase without asking)")
			}
			return fmt.Errorf("not erased: %q is not the account's name %q", got, name)
		}
	}
	done, res, err := cmds.EraseAccount.Handle(ctx, commands.EraseAccount{AccountID: id, By: eraser(), Reason: *reason})
	if err != nil {
		return err
	}
	fmt.Printf("erased account %s (%s): %d traces, %d annotations, %d reward models, %d GEPA runs, %d criteria, %d members; %d keys revoked\n",
		name, id, done.Traces, done.Annotations, done.RewardModels, done.GepaRuns, done.Criteria, done.Members, done.APIKeys)
	fmt.Printf("the name %s stays reserved for the erased account (account.erased.v1 records who, when and why)\n", name)
	settleCLI(ctx, waiter, res)
	return nil
}

// eraser is who account.erased names: the operating-system user who ran the
// command (the CLI has no API key).
func eraser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return "operator:" + u.Username
	}
	return "operator"
}
