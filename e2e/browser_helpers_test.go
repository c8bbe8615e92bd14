package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/platform/pg/pgtest"
)

// requireBrowser skips the test when this machine has no Chromium and
// fails it when the web app or its test runner is missing (make test builds
// both), returning the web app's folder.
func requireBrowser(t testing.TB) string {
	t.Helper()
	if _, err := os.Stat(chromiumPath()); err != nil {
		t.Skipf("\n\n*** BROWSER TESTS SKIPPED: no Chromium at %s (apt-get install chromium, or set CRITIC_CHROMIUM) ***\n\n", chromiumPath())
	}
	webDir := filepath.Join(pgtest.ModuleRoot(t), "web")
	_, err := os.Stat(filepath.Join(webDir, "dist", "index.html"))
	require.NoError(t, err, "the web app is not built: run `make web` (make test does) before this test")
	_, err = os.Stat(filepath.Join(webDir, "node_modules", "@playwright", "test"))
	require.NoError(t, err, "web/node_modules is missing: run `make web` (npm ci in web/)")
	return webDir
}

// runSpec runs one Playwright spec file in Chromium against the server at
// url, with env added to the runner's environment, prints the runner's
// `N passed, N failed` line under label, fails on any failure and returns
// how many tests passed.
func runSpec(t *testing.T, webDir, label, spec, url, key string, env ...string) int {
	t.Helper()
	report := filepath.Join(t.TempDir(), "report.json")
	cmd := exec.Command("npx", "playwright", "test", "-c", "e2e/playwright.config.ts", spec)
	cmd.Dir = webDir
	cmd.Env = append(os.Environ(), "CRITIC_E2E_URL="+url, "CRITIC_E2E_KEY="+key,
		"CRITIC_E2E_REPORT="+report, "CRITIC_CHROMIUM="+chromiumPath(), "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1", "CI=1")
	cmd.Env = append(cmd.Env, env...)
	if d := os.Getenv("CRITIC_E2E_SHOTS"); d != "" {
		cmd.Env = append(cmd.Env, "CRITIC_E2E_SHOTS="+d)
	}
	output, runErr := cmd.CombinedOutput()
	t.Logf("playwright:\n%s", output)
	raw, err := os.ReadFile(report)
	require.NoError(t, err, "playwright wrote no report (%v):\n%s", runErr, output)
	var rep playwrightReport
	require.NoError(t, json.Unmarshal(raw, &rep))
	passed := rep.Stats.Expected + rep.Stats.Flaky
	fmt.Printf("browser (%s): %d passed, %d failed, %d skipped\n", label, passed, rep.Stats.Unexpected, rep.Stats.Skipped)
	require.Zero(t, rep.Stats.Unexpected, "browser tests failed (details above)")
	require.NoError(t, runErr)
	return passed
}
