package e2e

import (
	"archive/zip"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/platform/eventstore"
)

// accountContent gives an account two traces, each carrying the account's
// marker in a step, a tool input, a comment and a quote (the first also in
// a payload large enough for the blob store), opposite ratings (so training
// has two pairs), guidelines, a criterion, a member and a requested reward
// model (its dataset quotes the traces in clear). It returns the traces'
// ids.
func accountContent(t *testing.T, in *instance, key, marker, base string, large bool) []string {
	t.Helper()
	trace := func(id, filler string) string {
		return `{"id":"` + id + `","steps":[{"role":"user","content":"My order ` + marker + ` is late. ` + filler + `"},` +
			`{"role":"assistant","content":"","tool_name":"lookup","tool_input":{"order":"` + marker + `"},"tool_call_id":"c1"},` +
			`{"role":"tool","content":"found","tool_name":"lookup","tool_call_id":"c1"},` +
			`{"role":"assistant","content":"Sure! Order ` + marker + ` ships today."}]}`
	}
	filler := ""
	if large {
		noise := make([]byte, eventstore.MaxInlinePayload/2+4096)
		_, _ = rand.Read(noise)
		filler = hex.EncodeToString(noise)
	}
	ids := in.importTraces(key, "stash", trace("t1", filler)+"\n"+trace("t2", ""))
	require.Len(t, ids, 2)
	for i, rating := range []int{1, -1} {
		tr := in.getTrace(t, key, ids[i])
		r := in.do("POST", "/api/v1/rm/traces/"+ids[i]+"/annotations", key, map[string]any{"step_id": tr.Steps[3]["id"], "rating": rating,
			"comment": "Customer " + marker + " needs a call.", "quote": map[string]any{"text": "Order " + marker, "prefix": "Sure! ", "suffix": " ships today."}})
		require.Equal(t, http.StatusOK, r.Status, string(r.Body))
		r = in.do("POST", "/api/v1/rm/traces/"+ids[i]+"/annotations", key, map[string]any{"rating": rating})
		require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	}
	r := in.do("PUT", "/api/v1/rm/guidelines", key, map[string]any{"markdown": "# Guidelines\n\nNever promise " + marker + "."})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	r = in.do("POST", "/api/v1/rm/criteria", key, map[string]any{"name": "Tone " + marker, "kind": "binary", "applies_to": "trace"})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
	r = in.do("POST", "/api/v1/rm/members", key, map[string]any{"name": "Rita " + marker, "role": "reviewer"})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
	r = in.do("POST", "/api/v1/rm/reward-models", key, map[string]any{"name": "model " + marker, "trace_ids": ids, "base_model": base, "epochs": 1})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	return ids
}

// TestAccountErasure erases one of two accounts with `critic users erase
// NAME --yes`, after `critic users export` and GET /export/account, whose
// traces re-import into a fresh account with the same steps. Afterwards no
// marker of the erased account is in a pg_dump of the database or in any
// file under $CRITIC_DATA_DIR (broker segments, DuckDB files, blobs:
// its large payload, its model's dataset), no event of it opens even with
// the master key (its trace and account keys are destroyed), its keys get
// 401, its name stays
// reserved, the other account's content still reads, and a replay of the
// read model equals the live one.
func TestAccountErasure(t *testing.T) {
	in := startServe(t)
	keyA := in.newUser("erased-co", false)
	keyB := in.newUser("kept-co", false)
	const a, b = "MARKER-ACCT-A-5e21", "MARKER-ACCT-B-c93d"
	base := tinyBase(t, in)
	idsA := accountContent(t, in, keyA, a, base, true)
	idsB := accountContent(t, in, keyB, b, base, false)
	require.Eventually(t, func() bool { return len(filesWith(t, filepath.Join(in.dataDir, "blobs"), a)) > 0 }, 30*time.Second, 100*time.Millisecond,
		"the requested model's dataset holds A's traces in clear: %s", in.do("GET", "/api/v1/rm/reward-models", keyA, nil).Body)
	count := `SELECT count(*) FROM steps WHERE content LIKE 'My order MARKER-ACCT-%'`
	in.awaitQuery(t, keyA, count, [][]any{{2}})
	in.awaitQuery(t, keyB, count, [][]any{{2}})

	// The export, over REST (admins only) and from the CLI.
	out, err := in.cli("users", "add-member", "erased-co", "vic", "--role", "viewer")
	require.NoError(t, err, out)
	viewer := keyRe.FindStringSubmatch(out)[1]
	require.Equal(t, http.StatusForbidden, in.do("GET", "/api/v1/rm/export/account", viewer, nil).Status)
	r := in.do("GET", "/api/v1/rm/export/account", keyA, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	zr, err := zip.NewReader(bytes.NewReader(r.Body), int64(len(r.Body)))
	require.NoError(t, err)
	zipped := map[string]string{}
	for _, f := range zr.File {
		rc, err := f.Open()
		require.NoError(t, err)
		body, err := io.ReadAll(rc)
		require.NoError(t, err)
		zipped[f.Name] = string(body)
	}
	for _, name := range []string{"traces.jsonl", "annotations.jsonl", "pairs.jsonl", "reward_models.json", "skills.json", "criteria.json", "members.json", "manifest.json"} {
		require.Contains(t, zipped, name)
	}
	dir := filepath.Join(t.TempDir(), "export")
	out, err = in.cli("users", "export", "erased-co", dir)
	require.NoError(t, err, out)
	require.Contains(t, out, "re-import elsewhere: critic import "+filepath.Join(dir, "traces.jsonl"))
	files := map[string]string{}
	for name := range zipped {
		body, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err, name)
		files[name] = string(body)
	}
	require.Equal(t, zipped["traces.jsonl"], files["traces.jsonl"], "the zip and the folder hold the same traces")
	out, err = in.cli("users", "export", "erased-co", dir)
	require.Error(t, err, out)
	require.Contains(t, out, "is not empty", "an export never overwrites another")
	require.Equal(t, 2, strings.Count(files["traces.jsonl"], "\n"))
	require.Equal(t, 4, strings.Count(files["annotations.jsonl"], "\n"))
	require.Contains(t, files["annotations.jsonl"], "Customer "+a)
	require.Equal(t, 2, strings.Count(files["pairs.jsonl"], "\n"), "a trace pair and an action pair")
	require.Contains(t, files["reward_models.json"], "model "+a)
	require.Contains(t, files["reward_models.json"], `"training_config"`)
	require.Contains(t, files["criteria.json"], "Tone "+a)
	require.Contains(t, files["criteria.json"], "Never promise "+a)
	require.Contains(t, files["members.json"], "Rita "+a)
	require.NotContains(t, files["members.json"], "key")
	var manifest struct {
		Counts map[string]int `json:"counts"`
	}
	require.NoError(t, json.Unmarshal([]byte(files["manifest.json"]), &manifest))
	require.Equal(t, 2, manifest.Counts["traces.jsonl"])
	require.Equal(t, 1, manifest.Counts["reward_models.json"])
	require.Equal(t, 3, manifest.Counts["members.json"], "the admin, Rita and vic")

	// The traces file re-imports into a fresh account: same steps.
	keyC := in.newUser("fresh-co", false)
	c := newClientEnv(t, "CRITIC_URL="+in.url, "CRITIC_API_KEY="+keyC)
	out, code := c.run("", "import", filepath.Join(dir, "traces.jsonl"))
	require.Equal(t, 0, code, out)
	for i, ext := range []string{"t1", "t2"} {
		orig := in.getTrace(t, keyA, idsA[i])
		again, ok := in.traceByExternalID(t, keyC, ext)
		require.True(t, ok, "trace %s re-imported", ext)
		again = in.getTrace(t, keyC, again.ID)
		require.Equal(t, len(orig.Steps), len(again.Steps))
		for j := range orig.Steps {
			for _, f := range []string{"role", "content", "tool_name", "tool_input", "tool_call_id"} {
				require.Equal(t, orig.Steps[j][f], again.Steps[j][f], "trace %s step %d %s", ext, j, f)
			}
		}
	}

	// The copy holds A's markers too: it goes the same way.
	out, err = in.cli("users", "erase", "fresh-co", "--yes")
	require.NoError(t, err, out)

	// A wrong name erases nothing.
	cmd := exec.Command(in.bin, "users", "erase", "erased-co")
	cmd.Env = in.env
	cmd.Stdin = strings.NewReader("kept-co\n")
	o, err := cmd.CombinedOutput()
	require.Error(t, err, string(o))
	require.Contains(t, string(o), "run `critic users export erased-co DIR` first")
	require.Contains(t, string(o), `not erased: "kept-co" is not the account's name "erased-co"`)
	require.Equal(t, http.StatusOK, in.do("GET", "/api/v1/rm/traces/"+idsA[0], keyA, nil).Status)

	out, err = in.cli("users", "erase", "erased-co", "--yes", "--reason", "GDPR request 42")
	require.NoError(t, err, out)
	require.Contains(t, out, "2 traces with their steps, blobs and 4 annotations")
	require.Contains(t, out, "erased account erased-co")
	waitReadModel(t, in)

	for _, k := range []string{keyA, viewer} {
		require.Equal(t, http.StatusUnauthorized, in.do("GET", "/api/v1/rm/traces", k, nil).Status, "the erased account's keys")
	}
	out, err = in.cli("users", "create", "--name", "erased-co")
	require.Error(t, err, out)
	require.Contains(t, out, "the name of an erased account stays reserved")
	out, err = in.cli("users", "erase", "erased-co", "--yes")
	require.Error(t, err, out)
	require.Contains(t, out, "already erased")
	out, err = in.cli("users", "issue-key", "--name", "erased-co")
	require.Error(t, err, out)
	require.Contains(t, out, "account erased-co is already erased", "an erased account takes no new key")

	tombs := in.openedPayloads(t, "account.erased.v1")
	require.Len(t, tombs, 2, "fresh-co's and erased-co's")
	tomb := tombs[1]
	require.Equal(t, "GDPR request 42", tomb["reason"])
	require.Equal(t, map[string]any{"traces": 2.0, "annotations": 4.0, "reward_models": 1.0, "gepa_runs": 0.0, "criteria": 1.0, "guidelines": 1.0,
		"members": 3.0, "api_keys": 3.0}, tomb["counts"])
	require.NotContains(t, mustJSON(tomb), a, "the tombstone holds counts, not content")

	for _, p := range in.openedPayloads(t, "") {
		require.NotContains(t, mustJSON(p), a, "no event of the erased account opens, even with the master key")
	}
	require.Empty(t, clipped(linesWith(pgDump(t, in), a)), "pg_dump holds nothing of the erased account")
	require.NotEmpty(t, linesWith(pgDump(t, in), b), "pg_dump still holds the other account (read model)")
	require.Empty(t, filesLeftWith(t, in.dataDir, a), "no file under the data dir holds the erased account's marker")
	require.NotEmpty(t, filesWith(t, filepath.Join(in.dataDir, "blobs"), b), "the other account's dataset stays")

	for _, id := range idsB {
		tr := in.do("GET", "/api/v1/rm/traces/"+id, keyB, nil)
		require.Equal(t, http.StatusOK, tr.Status)
		require.Contains(t, string(tr.Body), "Customer "+b)
	}
	require.Contains(t, string(in.do("GET", "/api/v1/rm/guidelines", keyB, nil).Body), "Never promise "+b)
	require.Contains(t, string(in.do("GET", "/api/v1/rm/reward-models", keyB, nil).Body), "model "+b)
	in.awaitQuery(t, keyB, count, [][]any{{2}})

	requireReplayMatches(t, in)
}

// clipped shortens each line to what names it (a row can carry a large
// payload).
func clipped(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l[:min(len(l), 300)]
	}
	return out
}

// TestEraseWithExportWhileStopped: `critic users erase NAME --export DIR
// --yes` with no server running writes the export first, then erases; the
// erased account has nothing left to export; once the server is back its
// key gets 401 and its trace is gone.
func TestEraseWithExportWhileStopped(t *testing.T) {
	in := startServe(t)
	key := in.newUser("leaving-co", false)
	in.importTraces(key, "stash", `{"id":"l1","steps":[{"role":"user","content":"Refund MARKER-LEAVE-1"},{"role":"assistant","content":"Done."}]}`)
	in.stop()
	dir := filepath.Join(t.TempDir(), "out")
	out, err := in.cli("users", "erase", "leaving-co", "--export", dir, "--yes")
	require.NoError(t, err, out)
	require.Contains(t, out, "exported leaving-co")
	require.Contains(t, out, "erased account leaving-co")
	body, err := os.ReadFile(filepath.Join(dir, "traces.jsonl"))
	require.NoError(t, err)
	require.Contains(t, string(body), "MARKER-LEAVE-1")
	out, err = in.cli("users", "export", "leaving-co", filepath.Join(t.TempDir(), "again"))
	require.Error(t, err, out)
	require.Contains(t, out, "account leaving-co is already erased", "nothing is left to export")

	in.start()
	require.Equal(t, http.StatusUnauthorized, in.do("GET", "/api/v1/rm/traces", key, nil).Status)
	waitReadModel(t, in)
	require.Empty(t, clipped(linesWith(pgDump(t, in), "MARKER-LEAVE-1")))
}
