package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/criticml/critic/platform/keyring"
)

const keysUsage = "usage: critic keys rotate|seal-existing (run with every API instance stopped)"

// cmdKeys manages the master key that wraps the per-trace data keys, and
// seals the events stored before encryption was on.
func cmdKeys(ctx context.Context, args []string) error {
	if len(args) != 1 || (args[0] != "rotate" && args[0] != "seal-existing") {
		return usageError{keysUsage}
	}
	in, err := boot(ctx)
	if err != nil {
		return err
	}
	defer in.Close()
	if args[0] == "seal-existing" {
		return sealExisting(ctx, in)
	}
	ring := in.store.Keyring()
	if ring == nil {
		return errors.New("critic keys rotate: CRITIC_ENCRYPTION=off, there are no data keys to re-wrap")
	}
	return rotateMasterKey(ctx, ring, cmp.Or(in.cfg.MasterKeyFile, defaultMasterKeyFile(in.cfg)))
}

// rotateMasterKey writes a new master key next to path, re-wraps every data
// key with it in one transaction, then moves it into place and keeps the old
// file as path.old-<time>. Until the transaction commits the old key is the
// one in use; an interrupted rotation leaves path.new, which is refused so a
// second run cannot replace a key the database may already be wrapped with.
func rotateMasterKey(ctx context.Context, ring *keyring.Ring, path string) error {
	next := path + ".new"
	if _, err := os.Stat(next); err == nil {
		return fmt.Errorf("%s exists: an earlier rotation was interrupted. If it printed \"re-wrapped\", move %s to %s; otherwise delete %s and run again", next, next, path, next)
	}
	key, err := keyring.CreateMasterKeyFile(next)
	if err != nil {
		return err
	}
	n, err := ring.Rotate(ctx, key)
	if err != nil {
		_ = os.Remove(next)
		return fmt.Errorf("rotate: %w (the master key is unchanged)", err)
	}
	fmt.Printf("re-wrapped %d data keys with the new master key\n", n)
	old := path + ".old-" + time.Now().UTC().Format("20060102T150405Z")
	if err := os.Rename(path, old); err != nil {
		return fmt.Errorf("keep the old key: %w; move %s to %s by hand", err, next, path)
	}
	if err := os.Rename(next, path); err != nil {
		return fmt.Errorf("install the new key: %w; move %s to %s by hand", err, next, path)
	}
	fmt.Printf("the new master key is %s; the old one is kept at %s. Restart every process that reads the log, then delete the old file (and its backups)\n", path, old)
	return nil
}
