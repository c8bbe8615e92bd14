package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchmarkReview is make bench-review: the built binary serving the
// embedded app; a reviewer whose queue holds 100 traces works through it
// in Chromium with the keyboard only (web/e2e/bench-review.mjs: c, the
// reason, Ctrl+Enter, +), and every item must end with exactly what was
// typed and pressed stored — one +1 and one comment with the typed text per
// trace, through GET /export/annotations. It prints items per minute and
// keys per rating with a reason (goal ≤ 3 plus the text), and the viewer's
// first-step-visible time on a 2,500-step trace (bench-ui's session)
// beside bench-ui's cold floor, measured in the same run.
func BenchmarkReview(b *testing.B) {
	webDir := requireBrowser(b)

	const items, steps = 100, 2500
	in := startServe(b)
	reviewer := in.newUser("reviewer", false)
	owner := in.newUser("owner", false)
	lines := make([]string, items)
	for i := range lines {
		lines[i] = fmt.Sprintf(`{"title":"Review item %d","steps":[{"role":"user","content":"Clean the build of item %d"},`+
			`{"role":"assistant","content":"I removed __pycache__/ and *.pyc files.\n\n    find . -name '*.pyc' -delete"}]}`, i, i)
	}
	ids := in.importTraces(reviewer, "stash", strings.Join(lines, "\n"))
	require.Len(b, ids, items)

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
	big := in.importTraces(owner, "stash", string(line))

	b.ResetTimer()
	cmd := exec.Command("node", "e2e/bench-review.mjs")
	cmd.Dir = webDir
	cmd.Env = append(os.Environ(), "CRITIC_E2E_URL="+in.url, "CRITIC_E2E_KEY="+reviewer, "CRITIC_BENCH_VIEWER_KEY="+owner, "CRITIC_BENCH_TRACE="+big[0],
		fmt.Sprintf("CRITIC_BENCH_STEPS=%d", steps), fmt.Sprintf("CRITIC_BENCH_ITEMS=%d", items), "CRITIC_CHROMIUM="+chromiumPath())
	out, err := cmd.CombinedOutput()
	require.NoError(b, err, "%s", out)
	b.StopTimer()

	// What the reviewer typed and pressed is what was stored: per trace one
	// +1 and one comment, the reason exactly as typed.
	r := in.do("GET", "/api/v1/rm/export/annotations", reviewer, nil)
	require.Equal(b, 200, r.Status, "%s", r.Body)
	var ratings, comments []string
	sc := bufio.NewScanner(bytes.NewReader(r.Body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var a struct {
			Rating  *int    `json:"rating"`
			Comment *string `json:"comment"`
		}
		require.NoError(b, json.Unmarshal(sc.Bytes(), &a))
		switch {
		case a.Rating != nil && a.Comment == nil:
			ratings = append(ratings, fmt.Sprint(*a.Rating))
		case a.Rating == nil && a.Comment != nil:
			comments = append(comments, *a.Comment)
		default:
			b.Fatalf("an annotation with both or neither: %s", sc.Bytes())
		}
	}
	want := make([]string, items)
	for i := range want {
		want[i] = fmt.Sprintf("item %d: lacks a source - guessed? j k + c", i+1)
	}
	sort.Strings(want)
	sort.Strings(comments)
	require.Equal(b, want, comments, "every reason stored exactly as typed, once")
	require.Equal(b, strings.Split(strings.Repeat("1,", items-1)+"1", ","), ratings, "one +1 per item, nothing else")

	text := strings.Split(strings.TrimSpace(string(out)), "\n")
	for _, l := range text[:len(text)-1] {
		fmt.Println("bench-review:", l)
	}
	var m map[string]float64
	require.NoError(b, json.Unmarshal([]byte(text[len(text)-1]), &m))
	b.ReportMetric(m["perMinute"], "items/min")
	b.ReportMetric(m["keysPerItem"], "keys/rating")
	b.ReportMetric(m["viewerFirst"], "viewer-first-ms")
	b.ReportMetric(m["viewerFirst"]/m["floor"], "viewer-first/floor")
}
