package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/members"
	"github.com/criticml/critic/projections/readmodel"
)

// cmdUsers manages accounts. Keys are printed once and stored as SHA-256.
func cmdUsers(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return usageError{"usage: critic users create|issue-key|add-member|list-keys|revoke-key|disable-reward-models|enable-reward-models|export|erase|retention"}
	}
	in, err := boot(ctx)
	if err != nil {
		return err
	}
	defer in.Close()
	cmds := commands.New(in.store)
	// With no API instance consuming (all stopped, or the one holding the
	// partition crashed) the CLI applies its own events, as the API does.
	waiter := readmodel.NewWaiter(in.pool, 10*time.Second).WithCatchUp(readmodel.New(in.pool, in.blobs, in.log).WithKeyring(in.store.Keyring()), in.store, 0, in.log)

	switch args[0] {
	case "create", "issue-key":
		fs := flag.NewFlagSet("users "+args[0], flag.ContinueOnError)
		name := fs.String("name", "", "account name")
		ro := fs.Bool("read-only-key", false, "issue a read-only key")
		fs.SetOutput(io.Discard)
		if err := fs.Parse(args[1:]); err != nil || *name == "" {
			return usageError{"usage: critic users " + args[0] + " --name NAME [--read-only-key]"}
		}
		var res commands.CreateUserResult
		if args[0] == "create" {
			res, err = cmds.CreateUser.Handle(ctx, commands.CreateUser{Name: *name, ReadOnlyKey: *ro})
		} else {
			var id string
			if id, err = userIDByName(ctx, in, *name); err == nil {
				res, err = cmds.IssueAPIKey.Handle(ctx, commands.IssueAPIKey{UserID: id, ReadOnly: *ro})
			}
		}
		if err != nil {
			return err
		}
		kind := "full-access"
		if *ro {
			kind = "read-only"
		}
		fmt.Printf("user:    %s (%s)\napi key: %s\n(%s; shown once, stored only as its SHA-256)\n", *name, res.UserID, res.APIKey, kind)
		settleCLI(ctx, waiter, res.Result)
		return nil
	case "export":
		return usersExport(ctx, in, cmds, waiter, args[1:])
	case "retention":
		return usersRetention(ctx, in, cmds, waiter, args[1:])
	case "erase":
		return usersErase(ctx, in, cmds, waiter, args[1:])
	case "add-member":
		return addMember(ctx, in, cmds, waiter, args[1:])
	case "list-keys":
		if len(args) != 2 {
			return usageError{"usage: critic users list-keys NAME"}
		}
		id, err := userIDByName(ctx, in, args[1])
		if err != nil {
			return err
		}
		keys, err := readmodel.NewQueries(in.pool).APIKeys(ctx, id)
		if err != nil {
			return err
		}
		printKeys(os.Stdout, keys)
		return nil
	case "revoke-key":
		if len(args) != 2 || strings.TrimSpace(args[1]) == "" {
			return usageError{"usage: critic users revoke-key KEY_PREFIX (as `critic users list-keys NAME` shows it; a key id or the whole key also work)"}
		}
		return revokeKey(ctx, in, cmds, waiter, strings.TrimSpace(args[1]))
	case "disable-reward-models", "enable-reward-models":
		if len(args) != 2 {
			return usageError{"usage: critic users " + args[0] + " NAME"}
		}
		id, err := userIDByName(ctx, in, args[1])
		if err != nil {
			return err
		}
		enabled := args[0] == "enable-reward-models"
		res, err := cmds.SetRewardModelsEnabled.Handle(ctx, commands.SetRewardModelsEnabled{UserID: id, Enabled: enabled})
		if err != nil {
			return err
		}
		fmt.Printf("reward models %s for %s (data kept)\n", map[bool]string{true: "enabled", false: "disabled"}[enabled], args[1])
		settleCLI(ctx, waiter, res)
		return nil
	}
	return usageError{fmt.Sprintf("unknown users command %q", args[0])}
}

// printKeys lists keys as a table: prefix, kind, created, last used,
// status. Never the key: only its prefix was ever stored.
func printKeys(w io.Writer, keys []readmodel.APIKeyInfo) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PREFIX\tKIND\tCREATED\tLAST USED\tSTATUS")
	for _, k := range keys {
		prefix := cmp.Or(k.Prefix, "(key id "+k.KeyID+")") // no prefix: issued before prefixes were recorded
		kind := "full-access"
		if k.ReadOnly {
			kind = "read-only"
		}
		last := "never"
		if k.LastUsed != nil {
			last = k.LastUsed.Format(time.RFC3339)
		}
		status := "active"
		if k.Revoked {
			status = "revoked"
			if k.RevokedAt != nil {
				status += " " + k.RevokedAt.Format(time.RFC3339)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", prefix, kind, k.CreatedAt.Format(time.RFC3339), last, status)
	}
	_ = tw.Flush()
}

// revokeKey finds the one key ref names and appends api_key.revoked. From
// that moment every API instance answers the key with 401 (the key lookup
// checks the event log); the read model's listing follows once applied.
func revokeKey(ctx context.Context, in *infra, cmds *commands.Commands, waiter *readmodel.Waiter, ref string) error {
	found, err := readmodel.NewQueries(in.pool).FindAPIKeys(ctx, ref, commands.HashAPIKey(ref))
	if err != nil {
		return err
	}
	switch len(found) {
	case 0:
		return fmt.Errorf("no API key matches %q: give the prefix `critic users list-keys NAME` shows (at least 11 characters, e.g. critic_AbCd), a key id or the whole key", ref)
	case 1:
	default:
		var names []string
		for _, k := range found {
			names = append(names, fmt.Sprintf("%s (%s)", k.Prefix, k.UserName))
		}
		return fmt.Errorf("%q matches %d keys: %s; give more of the key", ref, len(found), strings.Join(names, ", "))
	}
	k := found[0]
	res, err := cmds.RevokeAPIKey.Handle(ctx, commands.RevokeAPIKey{KeyID: k.KeyID})
	if err != nil {
		return err
	}
	name := cmp.Or(k.Prefix, "key id "+k.KeyID)
	fmt.Printf("revoked %s of %s: every API instance refuses it (401) from now on\n", name, k.UserName)
	if err := waiter.Wait(ctx, res.LastEventID); err != nil {
		fmt.Println("note: `critic users list-keys` shows it as revoked once a running server applies the event")
	}
	return nil
}

// addMember is `critic users add-member ACCOUNT NAME [--role reviewer]`: a
// member of the account with their first key, printed once with the web
// app's sign-in link for it (on CRITIC_PUBLIC_URL, else the listen address).
func addMember(ctx context.Context, in *infra, cmds *commands.Commands, waiter *readmodel.Waiter, args []string) error {
	const usage = "usage: critic users add-member ACCOUNT NAME [--role admin|reviewer|viewer] (default reviewer)"
	fs := flag.NewFlagSet("users add-member", flag.ContinueOnError)
	role := fs.String("role", string(members.Reviewer), "the member's role")
	fs.SetOutput(io.Discard)
	pos, err := parseAnywhere(fs, args, usage)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usageError{usage}
	}
	r, err := members.ParseRole("--role", *role)
	if err != nil {
		return err
	}
	id, err := userIDByName(ctx, in, pos[0])
	if err != nil {
		return err
	}
	res, err := cmds.AddMember.Handle(ctx, commands.AddMember{AccountID: id, Name: pos[1], Role: r})
	if err != nil {
		return err
	}
	base := cmp.Or(strings.TrimSuffix(in.cfg.PublicURL, "/"), "http://"+in.cfg.Addr)
	fmt.Printf("member:  %s (%s) of %s, role %s\napi key: %s\nsign in: %s/#invite=%s\n(the key is shown once and stored only as its SHA-256; the link works once, within 7 days, and issues the member a key of their own)\n",
		res.Member.Name, res.Member.ID, pos[0], r, res.APIKey, base, res.InviteToken)
	settleCLI(ctx, waiter, res.Result)
	return nil
}

// userIDByName reads the name reservation stream: the event log, not the read
// model, is the authority on who owns a name. An erased account's name is a
// conflict.
func userIDByName(ctx context.Context, in *infra, name string) (string, error) {
	stream := events.UserNameStream(name)
	loaded, err := in.store.LoadStreams(ctx, []string{stream})
	if err != nil {
		return "", err
	}
	evs := loaded[stream]
	if len(evs) == 0 {
		return "", domain.NotFound("user", name)
	}
	var p events.UserNameClaimedV1
	if err := evs[0].Decode(&p); err != nil {
		return "", err
	}
	// An erased account keeps its name but takes nothing more: no key,
	// member or setting (their events would outlive the erasure).
	user := events.UserStream(p.UserID)
	loaded, err = in.store.LoadStreams(ctx, []string{user})
	if err != nil {
		return "", err
	}
	for _, e := range loaded[user] {
		if e.Type == events.AccountErased {
			var er events.AccountErasedV1
			_ = e.Decode(&er)
			return "", &domain.ConflictError{Code: "account_erased", Message: "account " + name + " is already erased (" + er.At + "); its name stays reserved"}
		}
	}
	return p.UserID, nil
}

// settleCLI waits for the read model so the change is live when the command
// returns; without a running server it says so instead of failing.
func settleCLI(ctx context.Context, w *readmodel.Waiter, r commands.Result) {
	if err := w.Wait(ctx, r.LastEventID); err != nil {
		if _, ok := errors.AsType[*domain.UnavailableError](err); ok {
			fmt.Println("note: stored; it takes effect once `critic serve` or `critic run` applies it")
			return
		}
		fmt.Println("note:", err)
	}
}
