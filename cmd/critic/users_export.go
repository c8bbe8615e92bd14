package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/handlers/usecase"
	"github.com/criticml/critic/projections/readmodel"
)

const usersExportUsage = "usage: critic users export NAME DIR (DIR is created; it must be empty if it exists)"

// usersExport is `critic users export NAME DIR`: the account's whole export
// (the files GET /export/account zips) written into a folder, so an operator
// can hand it over before `critic users erase` and the user can
// `critic import DIR/traces.jsonl` elsewhere.
func usersExport(ctx context.Context, in *infra, cmds *commands.Commands, waiter *readmodel.Waiter, args []string) error {
	if len(args) != 2 || args[0] == "" || args[1] == "" {
		return usageError{usersExportUsage}
	}
	id, err := userIDByName(ctx, in, args[0])
	if err != nil {
		return err
	}
	m, err := exportAccountTo(ctx, in, cmds, waiter, id, args[0], args[1])
	if err != nil {
		return err
	}
	printExport(os.Stdout, m, args[1])
	return nil
}

// exportAccountTo writes the account's export into dir, refusing a folder
// that already holds files (an export never overwrites another). The export
// reads the read model, so it first waits until that has applied the
// account's latest event (applying it itself when no server runs): an
// export taken before an erasure must not miss the last import.
func exportAccountTo(ctx context.Context, in *infra, cmds *commands.Commands, waiter *readmodel.Waiter, id, name, dir string) (usecase.AccountExport, error) {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return usecase.AccountExport{}, fmt.Errorf("export folder %s is not empty: give a new or empty folder", dir)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return usecase.AccountExport{}, fmt.Errorf("export folder %s: %w", dir, err)
	}
	var last string
	if err := in.pool.QueryRow(ctx, `SELECT id::text FROM events WHERE owner_id = $1 ORDER BY seq DESC LIMIT 1`, id).Scan(&last); err != nil {
		return usecase.AccountExport{}, fmt.Errorf("export %s: the account's latest event: %w", name, err)
	}
	if err := waiter.Wait(ctx, last); err != nil {
		return usecase.AccountExport{}, fmt.Errorf("export %s: the read model has not applied the account's latest event, so the export would miss some of it: %w", name, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return usecase.AccountExport{}, fmt.Errorf("export folder %s: %w", dir, err)
	}
	b := usecase.Backend{Cmds: cmds, Queries: readmodel.NewQueries(in.pool)}
	out := &dirWriter{dir: dir}
	m, err := b.ExportAccount(ctx, id, name, out, time.Now())
	if cerr := out.close(); err == nil {
		err = cerr
	}
	if err != nil {
		return m, fmt.Errorf("export %s into %s: %w", name, dir, err)
	}
	return m, nil
}

func printExport(w io.Writer, m usecase.AccountExport, dir string) {
	fmt.Fprintf(w, "exported %s (%s) into %s:\n", m.Account, m.AccountID, dir)
	for _, n := range slices.Sorted(maps.Keys(m.Counts)) {
		fmt.Fprintf(w, "  %-20s %d\n", n, m.Counts[n])
	}
	fmt.Fprintf(w, "re-import elsewhere: critic import %s\n", filepath.Join(dir, usecase.ExportTracesFile))
}

// dirWriter is an ArchiveWriter over a folder: each file is created in
// turn, the previous one closed.
type dirWriter struct {
	dir string
	f   *os.File
}

func (d *dirWriter) Create(name string) (io.Writer, error) {
	if err := d.close(); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(d.dir, filepath.Base(name)), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	d.f = f
	return f, nil
}

func (d *dirWriter) close() error {
	if d.f == nil {
		return nil
	}
	err := d.f.Close()
	d.f = nil
	return err
}
