package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/criticml/critic/cmd/critic/client"
	"github.com/criticml/critic/domain/formats"
)

const importUsage = "usage: critic import PATH… [--format auto|NAME] [--source-id ID] [--dry-run] [--parallel N] [--max-request-bytes N]"

// importExts are the file names a folder import picks up.
var importExts = map[string]bool{".jsonl": true, ".ndjson": true, ".json": true}

// importInput is one file (or stdin) to import.
type importInput struct {
	name string // as the user sees it
	path string // "" for stdin
	size int64
}

// importOutcome is what happened to one input.
type importOutcome struct {
	in      importInput
	res     client.Result
	fail    *client.Failure
	skipped string // why nothing was sent (empty file)
}

// cmdImport sends files, folders (recursively, by extension) or stdin to
// POST /api/v1/rm/traces/import. Each input is detected and cut into
// requests locally with the server's own adapters, so a large file never
// hits the body limit and no trace is split; files go up in parallel.
func cmdImport(ctx context.Context, args []string) error {
	flags, paths, err := clientArgs(args, []string{"format", "source-id", "parallel", "max-request-bytes"}, []string{"dry-run"})
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		return usageError{importUsage}
	}
	format := cmp.Or(flags["format"], "auto")
	if _, err := formats.Lookup(format); err != nil {
		return err
	}
	sourceID := flags["source-id"]
	if _, ok := flags["source-id"]; ok && (sourceID == "" || len([]rune(sourceID)) > 200) {
		return usageError{"--source-id must be 1–200 characters"}
	}
	parallel, err := intFlag(flags, "parallel", 4, 1)
	if err != nil {
		return err
	}
	maxReq, err := intFlag(flags, "max-request-bytes", client.DefaultMaxRequest, 1024)
	if err != nil {
		return err
	}
	inputs, err := collectInputs(paths)
	if err != nil {
		return err
	}
	if len(inputs) == 0 {
		return fmt.Errorf("no .jsonl, .ndjson or .json files under %s", strings.Join(paths, ", "))
	}
	dry := flags["dry-run"] != ""
	var up *client.Uploader
	if !dry {
		c, err := serverClient()
		if err != nil {
			return err
		}
		up = &client.Uploader{Client: c, Path: client.ImportPath, MaxRequest: maxReq}
	}

	var total int64
	for _, in := range inputs {
		total += in.size
	}
	tty := client.IsTerminal(os.Stderr)
	var out io.Writer = os.Stdout
	if tty {
		out = os.Stderr
	}
	prog := client.NewProgress(out, tty, len(inputs), total)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	outcomes := make([]importOutcome, len(inputs))
	jobs := make(chan int)
	var wg sync.WaitGroup
	var abortOnce sync.Once
	var abort error // the server is unreachable or refuses the key: stop
	for range parallel {
		wg.Go(func() {
			for i := range jobs {
				o := importOne(ctx, inputs[i], format, sourceID, maxReq, up, prog, dry)
				outcomes[i] = o
				if o.fail != nil && (o.fail.Code == "unauthorized" || strings.Contains(o.fail.Message, "cannot reach the Critic server")) {
					abortOnce.Do(func() { abort = errors.New(o.fail.Message) })
					cancel()
				}
				prog.FileDone(outcomeLine(o, dry))
			}
		})
	}
	for i := range inputs {
		if ctx.Err() != nil {
			break
		}
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	prog.Finish()
	if abort != nil {
		return abort
	}
	return importSummary(os.Stdout, outcomes, dry, prog.Rate())
}

// collectInputs expands the command line: "-" is stdin, a folder is every
// matching file under it (sorted), a file is itself whatever its name.
func collectInputs(paths []string) ([]importInput, error) {
	var out []importInput
	stdin := false
	for _, p := range paths {
		if p == "-" {
			if stdin {
				return nil, usageError{"- (stdin) can be given once"}
			}
			stdin = true
			out = append(out, importInput{name: "-"})
			continue
		}
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			out = append(out, importInput{name: p, path: p, size: st.Size()})
			continue
		}
		var found []importInput
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || !importExts[strings.ToLower(filepath.Ext(path))] {
				return nil
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			found = append(found, importInput{name: path, path: path, size: info.Size()})
			return nil
		})
		if err != nil {
			return nil, err
		}
		sort.Slice(found, func(i, j int) bool { return found[i].path < found[j].path })
		out = append(out, found...)
	}
	return out, nil
}

func importOne(ctx context.Context, in importInput, format, sourceID string, maxReq int, up *client.Uploader, prog *client.Progress, dry bool) importOutcome {
	o := importOutcome{in: in}
	var data []byte
	var err error
	if in.path == "" {
		data, err = io.ReadAll(os.Stdin)
	} else {
		data, err = os.ReadFile(in.path)
	}
	if err != nil {
		o.fail = &client.Failure{Message: err.Error()}
		return o
	}
	if len(strings.TrimSpace(string(data))) == 0 {
		o.skipped = "empty"
		prog.Advance(int64(len(data)), 0)
		return o
	}
	if err := client.CheckUTF8(data); err != nil {
		o.fail = client.FailureOf(err, nil)
		return o
	}
	name, err := client.ResolveFormat(format, data)
	if err != nil {
		o.fail = client.FailureOf(err, nil)
		return o
	}
	o.res.Format = name
	if dry {
		// Parse locally with the server's adapters and count what would be
		// sent, without a server.
		a, _ := formats.Lookup(name)
		traces, err := a.Parse(data)
		if err != nil {
			o.fail = client.FailureOf(err, nil)
			return o
		}
		chunks, err := client.Split(name, data, sourceID, maxReq)
		if err != nil {
			o.fail = client.FailureOf(err, nil)
			return o
		}
		o.res.Traces, o.res.Requests, o.res.Sent = len(traces), len(chunks), int64(len(data))
		prog.Advance(int64(len(data)), len(traces))
		return o
	}
	u := *up
	u.OnChunk = func(b int64, traces int) { prog.Advance(b, traces) }
	res, fail := u.Upload(ctx, name, data, sourceID)
	o.res, o.fail = res, fail
	if fail != nil && ctx.Err() != nil && !strings.Contains(fail.Message, "cannot reach") {
		fail.Message = "cancelled: " + fail.Message
	}
	return o
}

func outcomeLine(o importOutcome, dry bool) string {
	switch {
	case o.fail != nil:
		return fmt.Sprintf("failed     %s: %s", o.in.name, o.fail.Error())
	case o.skipped != "":
		return fmt.Sprintf("skipped    %s: %s", o.in.name, o.skipped)
	case dry:
		return fmt.Sprintf("would send %s: %d traces (%s) in %d request(s)", o.in.name, o.res.Traces, o.res.Format, o.res.Requests)
	case o.res.Traces > 0 && o.res.Unchanged == o.res.Traces:
		return fmt.Sprintf("unchanged  %s: %d traces (%s)", o.in.name, o.res.Traces, o.res.Format) + erasedNote(o.res.Erased)
	}
	line := fmt.Sprintf("imported   %s: %d traces (%s), %d unchanged", o.in.name, o.res.Traces, o.res.Format, o.res.Unchanged)
	if o.res.AnnotationsRemoved > 0 {
		line += fmt.Sprintf(", %d annotation(s) removed with changed steps", o.res.AnnotationsRemoved)
	}
	return line + erasedNote(o.res.Erased)
}

// erasedNote names the traces an import left out because they were erased
// before: the server does not store an erased trace again.
func erasedNote(erased []string) string {
	if len(erased) == 0 {
		return ""
	}
	return fmt.Sprintf(", %d left out: erased before (%s)", len(erased), strings.Join(erased, ", "))
}

// importSummary prints the totals and every failure with its line and
// field; it returns an error (non-zero exit) when any input failed.
func importSummary(w io.Writer, outs []importOutcome, dry bool, rate float64) error {
	var imported, unchanged, failed, skipped, traces, removed int
	var bytes int64
	var fails []importOutcome
	for _, o := range outs {
		if o.in.name == "" {
			continue // never started (aborted)
		}
		bytes += o.res.Sent
		removed += o.res.AnnotationsRemoved
		switch {
		case o.fail != nil:
			failed++
			fails = append(fails, o)
		case o.skipped != "":
			skipped++
		case !dry && o.res.Traces > 0 && o.res.Unchanged == o.res.Traces:
			unchanged++
		default:
			imported++
			traces += o.res.Traces
		}
	}
	verb := "imported"
	if dry {
		verb = "would import"
	}
	fmt.Fprintf(w, "%s %d file(s) (%d traces), unchanged %d, failed %d", verb, imported, traces, unchanged, failed)
	if skipped > 0 {
		fmt.Fprintf(w, ", skipped %d empty", skipped)
	}
	if removed > 0 {
		fmt.Fprintf(w, ", %d annotation(s) removed with changed steps", removed)
	}
	if !dry && bytes > 0 {
		fmt.Fprintf(w, "; %s at %.1f MB/s", client.HumanBytes(bytes), rate)
	}
	fmt.Fprintln(w)
	for _, o := range fails {
		fmt.Fprintf(w, "  %s: %s\n", o.in.name, o.fail.Error())
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d file(s) failed", failed, len(outs))
	}
	return nil
}
