package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkUI is make bench-ui: the built binary serving the embedded app,
// a generated 2,500-step session and a 20,000-trace list, opened in
// Chromium. It prints the time to the first rendered screen and to reach the
// end (scroll to the last step; the list's last page) beside the time the
// same browser needs just to fetch and parse the JSON those screens show —
// the limit the app is measured against (target ≤ 2×). App times are cold
// loads measured by the page's clock from navigation start to the painted
// frame (web/e2e/bench-ui.mjs says how); the harness's wall clock is
// printed beside them. In the same run: the cold floor (the same cold
// navigation to a page with no app code that fetches, parses and paints the
// same JSON) and in-app navigation (the app open on another page, a click
// on the link, click to painted screen), each against the same limit.
func BenchmarkUI(b *testing.B) {
	webDir := requireBrowser(b)

	const steps, traces = 2500, 20000
	in := startServe(b)
	key := in.newUser("bench", false)
	lines := make([]string, 0, 1000)
	flush := func() {
		if len(lines) > 0 {
			in.importTraces(key, "stash", strings.Join(lines, "\n"))
			lines = lines[:0]
		}
	}
	for i := range traces - 1 {
		lines = append(lines, fmt.Sprintf(`{"title":"Bench trace %d","steps":[{"role":"user","content":"question %d"},{"role":"assistant","content":"answer %d"}]}`, i, i, i))
		if len(lines) == cap(lines) {
			flush()
		}
	}
	flush()
	session := make([]map[string]any, steps)
	for i := range session {
		s := map[string]any{"role": []string{"user", "assistant", "assistant", "tool"}[i%4], "content": fmt.Sprintf("Step %d. Some **markdown** with `code` and a list:\n\n- one\n- two\n\n```go\nfunc f%d() int { return %d }\n```", i+1, i, i)}
		if i%4 == 2 {
			s["tool_name"], s["tool_call_id"], s["tool_input"] = "run", fmt.Sprintf("c%d", i), map[string]any{"cmd": "ls"}
		}
		if i%4 == 3 {
			s["tool_name"], s["tool_call_id"], s["content"] = "run", fmt.Sprintf("c%d", i-1), `{"stdout":"a\nb"}`
		}
		session[i] = s
	}
	line, err := json.Marshal(map[string]any{"title": "A 2,500-step session", "steps": session})
	require.NoError(b, err)
	big := in.importTraces(key, "stash", string(line))

	b.ResetTimer()
	cmd := exec.Command("node", "e2e/bench-ui.mjs")
	cmd.Dir = webDir
	cmd.Env = append(os.Environ(), "CRITIC_E2E_URL="+in.url, "CRITIC_E2E_KEY="+key, "CRITIC_BENCH_TRACE="+big[0],
		fmt.Sprintf("CRITIC_BENCH_STEPS=%d", steps), fmt.Sprintf("CRITIC_BENCH_TRACES=%d", traces), "CRITIC_CHROMIUM="+chromiumPath())
	out, err := cmd.CombinedOutput()
	require.NoError(b, err, "%s", out)
	b.StopTimer()
	text := strings.TrimSpace(string(out))
	lines = strings.Split(text, "\n")
	for _, l := range lines[:len(lines)-1] {
		fmt.Println("bench-ui:", l)
	}
	// The server's own share of the limit: the same GETs from a Go client
	// (body read, nothing parsed), after the browser is done, median of 5.
	server := func(path string) (float64, int) {
		var ds []float64
		n := 0
		for range 5 {
			t0 := time.Now()
			r := in.do("GET", path, key, nil)
			ds = append(ds, float64(time.Since(t0).Microseconds())/1000)
			require.Equal(b, 200, r.Status, "%s", r.Body)
			n = len(r.Body)
		}
		slices.Sort(ds)
		return ds[len(ds)/2], n
	}
	st, sn := server("/api/v1/rm/traces/" + big[0])
	sf, _ := server("/api/v1/rm/traces?limit=50&offset=0")
	sl, _ := server(fmt.Sprintf("/api/v1/rm/traces?limit=50&offset=%d", (traces+49)/50*50-50))
	fmt.Printf("bench-ui: server alone (Go client, body read, no browser): trace %.0f ms (%d kB), list first page %.0f ms, last page %.0f ms\n", st, sn/1000, sf, sl)
	var m map[string]float64
	require.NoError(b, json.Unmarshal([]byte(lines[len(lines)-1]), &m))
	b.ReportMetric(m["traceFirst"]/m["traceLimit"], "trace-first/limit")
	b.ReportMetric((m["traceFirst"]+m["traceEnd"])/m["traceLimit"], "trace-end/limit")
	b.ReportMetric(m["listFirst"]/m["listLimit"], "list-first/limit")
	b.ReportMetric(m["listEnd"]/m["lastLimit"], "list-last/limit")
	// The same screens by the harness's wall clock (navigation request to
	// Playwright seeing the element), which adds CDP round trips and polling.
	b.ReportMetric(m["traceFirstWall"]/m["traceLimit"], "trace-first-wall/limit")
	b.ReportMetric(m["listEndWall"]/m["lastLimit"], "list-last-wall/limit")
	// The cold floor: the same cold navigation to a page with no app code
	// that fetches, parses and paints the same JSON (public/bench-floor.html).
	b.ReportMetric(m["traceFirst"]/m["traceFloor"], "trace-first/floor")
	b.ReportMetric(m["listFirst"]/m["listFloor"], "list-first/floor")
	b.ReportMetric(m["traceFloor"]/m["traceLimit"], "trace-floor/limit")
	b.ReportMetric(m["listFloor"]/m["listLimit"], "list-floor/limit")
	// In-app navigation: the app already open, a click on the link.
	b.ReportMetric(m["traceNav"]/m["traceLimit"], "trace-nav/limit")
	b.ReportMetric(m["listNav"]/m["listLimit"], "list-nav/limit")
	// The in-page floor: the same JSON fetched and parsed in the open app
	// page, then the screen's own DOM (captured from the app) painted.
	b.ReportMetric(m["traceScreen"]/m["traceLimit"], "trace-screen/limit")
	b.ReportMetric(m["listScreen"]/m["listLimit"], "list-screen/limit")
	b.ReportMetric(m["traceNav"]/m["traceScreen"], "trace-nav/screen")
	b.ReportMetric(m["listNav"]/m["listScreen"], "list-nav/screen")
}
