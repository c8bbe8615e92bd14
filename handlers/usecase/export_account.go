package usecase

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"time"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/projections/readmodel"
)

// ArchiveWriter is where a whole-account export goes, one named file after
// another: *zip.Writer is one (GET /export/account streams a zip) and a
// folder is another (`critic users export NAME DIR`), so both write the same
// files.
type ArchiveWriter interface {
	Create(name string) (io.Writer, error)
}

// The files of an account export. traces.jsonl is the Stash Trace Format
// that `critic import` (and POST /traces/import) reads back.
const (
	ExportTracesFile      = "traces.jsonl"
	ExportAnnotationsFile = "annotations.jsonl"
	ExportPairsFile       = "pairs.jsonl"
	ExportModelsFile      = "reward_models.json"
	ExportSkillsFile      = "skills.json"
	ExportCriteriaFile    = "criteria.json"
	ExportMembersFile     = "members.json"
	ExportManifestFile    = "manifest.json"
)

// AccountExport is manifest.json: what the export holds, counted, so a
// reader (or the operator about to erase the account) can check it.
type AccountExport struct {
	AccountID  string         `json:"account_id"`
	Account    string         `json:"account"`
	ExportedAt time.Time      `json:"exported_at"`
	Counts     map[string]int `json:"counts"`
	ReImport   string         `json:"re_import"`
}

// exportedMember is a member as the export writes it: name and role,
// never a key or a key's hash.
type exportedMember struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Role      string    `json:"role"`
	CreatedAt time.Time `json:"created_at"`
	Removed   bool      `json:"removed"`
}

// ExportAccount writes everything an account holds that a user can take
// elsewhere before the account is erased (issue 37, "export before erase"):
// its traces with their steps (re-importable), annotations (ratings,
// comments, quotes, criterion values, who made them), every preference pair
// its annotations give today, its reward models' metadata (configuration,
// status, metrics, learning report; not weights, which stay downloadable at
// /reward-models/{id}/weights until erased), its GEPA runs with their
// skills, criteria and guidelines, and its members (names and roles). The
// manifest goes last, with the counts of what was written.
func (b Backend) ExportAccount(ctx context.Context, ownerID, name string, out ArchiveWriter, now time.Time) (AccountExport, error) {
	m := AccountExport{AccountID: ownerID, Account: name, ExportedAt: now.UTC(), Counts: map[string]int{},
		ReImport: "critic import " + ExportTracesFile + " (with the new account's key) re-imports the traces and their steps"}
	for _, f := range []struct {
		name  string
		write func(io.Writer) error
	}{
		{ExportTracesFile, func(w io.Writer) error { return b.Queries.ExportTraces(ctx, ownerID, w) }},
		{ExportAnnotationsFile, func(w io.Writer) error { return b.Queries.ExportAnnotationsBy(ctx, ownerID, "", w) }},
		{ExportPairsFile, func(w io.Writer) error {
			traces, ratings, err := b.Queries.PairInputsBy(ctx, ownerID, "", nil)
			if err != nil {
				return err
			}
			_, err = w.Write(domain.MarshalPairsJSONL(domain.BuildPairs(traces, ratings, math.MaxInt32)))
			return err
		}},
	} {
		w, err := out.Create(f.name)
		if err != nil {
			return m, err
		}
		lc := &lineCounter{w: w}
		if err := f.write(lc); err != nil {
			return m, err
		}
		m.Counts[f.name] = lc.lines
	}

	list, err := b.Queries.ListRewardModels(ctx, ownerID)
	if err != nil {
		return m, err
	}
	models := make([]*readmodel.RewardModelDetail, 0, len(list))
	for _, rm := range list {
		d, err := b.Queries.GetRewardModel(ctx, ownerID, rm.ID)
		if err != nil {
			return m, err
		}
		models = append(models, d)
	}
	runs, err := b.Queries.ListGepaRuns(ctx, ownerID)
	if err != nil {
		return m, err
	}
	crit, err := b.Queries.ListCriteria(ctx, ownerID, true)
	if err != nil {
		return m, err
	}
	guide, err := b.Queries.GetGuidelines(ctx, ownerID)
	if err != nil {
		return m, err
	}
	team, err := b.Queries.Members(ctx, ownerID)
	if err != nil {
		return m, err
	}
	mem := make([]exportedMember, 0, len(team))
	for _, t := range team {
		mem = append(mem, exportedMember{ID: t.ID, Name: t.Name, Role: string(t.Role), CreatedAt: t.CreatedAt.UTC(), Removed: t.Removed})
	}
	if runs == nil {
		runs = []readmodel.GepaRun{}
	}
	if crit == nil {
		crit = []readmodel.Criterion{}
	}
	for _, f := range []struct {
		name  string
		n     int
		value any
	}{
		{ExportModelsFile, len(models), models},
		{ExportSkillsFile, len(runs), runs},
		{ExportCriteriaFile, len(crit), map[string]any{"criteria": crit, "guidelines": guide}},
		{ExportMembersFile, len(mem), mem},
	} {
		if err := writeJSON(out, f.name, f.value); err != nil {
			return m, err
		}
		m.Counts[f.name] = f.n
	}
	return m, writeJSON(out, ExportManifestFile, m)
}

func writeJSON(out ArchiveWriter, name string, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	w, err := out.Create(name)
	if err != nil {
		return err
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// lineCounter counts the JSONL records written through it.
type lineCounter struct {
	w     io.Writer
	lines int
}

func (c *lineCounter) Write(p []byte) (int, error) {
	c.lines += bytes.Count(p, []byte{'\n'})
	return c.w.Write(p)
}
