package formats

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
)

// Real public exports (Langfuse traces, a Claude Code transcript) live
// outside the repository, in ../shared/fixtures next to the checkout, or
// wherever CRITIC_FIXTURES_DIR points. A fresh clone has none: the tests
// that read them skip, and TestMain says how many and why, so a green run
// never hides that they did not run. CRITIC_REQUIRE_FIXTURES=1 turns a
// missing fixture into a failure (CI machines that have them).

var fixtureSkips struct {
	sync.Mutex
	files map[string]string // fixture → the test that wanted it
}

// fixturesDir is where the shared public exports are expected.
func fixturesDir() string {
	if d := os.Getenv("CRITIC_FIXTURES_DIR"); d != "" {
		return d
	}
	return filepath.Join("..", "..", "..", "shared", "fixtures")
}

// sharedFixture reads a shared fixture (a path under fixturesDir); when it
// is missing, it records the skip and skips the test with the reason.
func sharedFixture(t *testing.T, rel string) []byte {
	t.Helper()
	path := filepath.Join(fixturesDir(), rel)
	data, err := os.ReadFile(path)
	if err == nil {
		return data
	}
	if os.Getenv("CRITIC_REQUIRE_FIXTURES") == "1" {
		t.Fatalf("shared fixture %s: %v (CRITIC_REQUIRE_FIXTURES=1)", path, err)
	}
	fixtureSkips.Lock()
	if fixtureSkips.files == nil {
		fixtureSkips.files = map[string]string{}
	}
	fixtureSkips.files[rel] = t.Name()
	fixtureSkips.Unlock()
	t.Skipf("shared fixture %s not present (%v): set CRITIC_FIXTURES_DIR to a copy of the shared fixtures to run this", path, err)
	return nil
}

// sharedFixtureGlob lists shared fixtures matching pattern; none found is
// recorded as a skip of what would have been checked.
func sharedFixtureGlob(t *testing.T, pattern string) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(fixturesDir(), pattern))
	if len(files) == 0 {
		if os.Getenv("CRITIC_REQUIRE_FIXTURES") == "1" {
			t.Fatalf("no shared fixtures match %s (CRITIC_REQUIRE_FIXTURES=1)", filepath.Join(fixturesDir(), pattern))
		}
		fixtureSkips.Lock()
		if fixtureSkips.files == nil {
			fixtureSkips.files = map[string]string{}
		}
		fixtureSkips.files[pattern] = t.Name()
		fixtureSkips.Unlock()
	}
	return files
}

// fixtureSkipSummary is the line TestMain prints ("" when nothing skipped).
func fixtureSkipSummary() string {
	fixtureSkips.Lock()
	defer fixtureSkips.Unlock()
	if len(fixtureSkips.files) == 0 {
		return ""
	}
	var names []string
	for f, test := range fixtureSkips.files {
		names = append(names, test+" ("+f+")")
	}
	sort.Strings(names)
	return fmt.Sprintf("domain/formats: %d check(s) of real public exports skipped: the shared fixtures are not in %s "+
		"(a fresh clone has none; set CRITIC_FIXTURES_DIR): %s", len(names), fixturesDir(), strings.Join(names, ", "))
}

// TestMain prints the skip summary after the run. `go test ./...` shows a
// passing package's output only with -v, so the summary also goes to the
// file CRITIC_TEST_NOTES names, which `make test` prints at the end.
func TestMain(m *testing.M) {
	code := m.Run()
	if s := fixtureSkipSummary(); s != "" {
		fmt.Println(s)
		if notes := os.Getenv("CRITIC_TEST_NOTES"); notes != "" {
			if f, err := os.OpenFile(notes, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644); err == nil {
				fmt.Fprintln(f, s)
				f.Close()
			}
		}
	}
	os.Exit(code)
}

// TestFixtureSkipsAreCounted: a missing shared fixture is a recorded skip
// with its reason, never a silent pass.
func TestFixtureSkipsAreCounted(t *testing.T) {
	t.Setenv("CRITIC_FIXTURES_DIR", t.TempDir())
	t.Setenv("CRITIC_REQUIRE_FIXTURES", "")
	ok := t.Run("wants a fixture", func(t *testing.T) { sharedFixture(t, "nope/missing.json") })
	require := func(c bool, msg string) {
		t.Helper()
		if !c {
			t.Fatal(msg)
		}
	}
	require(ok, "a skipped subtest is not a failure")
	s := fixtureSkipSummary()
	require(strings.Contains(s, "TestFixtureSkipsAreCounted/wants_a_fixture (nope/missing.json)"), s)
	require(strings.Contains(s, "not in "+os.Getenv("CRITIC_FIXTURES_DIR")), s)
	fixtureSkips.Lock()
	delete(fixtureSkips.files, "nope/missing.json")
	fixtureSkips.Unlock()
}
