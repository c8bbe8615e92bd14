package labels

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain"
)

func longTrace(n int, content func(i int) string) []domain.Step {
	steps := []domain.Step{{Role: domain.RoleUser, Content: "migrate the database"}}
	for i := 1; i < n; i++ {
		steps = append(steps, domain.Step{Role: domain.RoleAssistant, Content: content(i)})
	}
	return steps
}

func allTargets(cs []Chunk) []int {
	out := make([]int, len(cs))
	for i := range cs {
		out[i] = i
	}
	return out
}

// TestWindowsCoverEveryTarget: a trace far above the budgets is labeled in
// several overlapping windows; every target is in exactly one, no window
// exceeds the budgets, and each shows the request that precedes it.
func TestWindowsCoverEveryTarget(t *testing.T) {
	t.Parallel()
	steps := longTrace(300, func(i int) string { return strings.Repeat("x", 100) })
	cs := Chunks(steps)
	ws := Windows(steps, cs, allTargets(cs), DefaultLimits)
	require.Greater(t, len(ws), 3)
	seen := map[int]int{}
	for k, w := range ws {
		require.LessOrEqual(t, len(w.Context), DefaultLimits.MaxChunks)
		chars := 0
		in := map[int]bool{}
		for _, c := range w.Context {
			chars += ChunkChars(steps, cs[c])
			in[c] = true
		}
		require.LessOrEqual(t, chars, DefaultLimits.MaxChars)
		for _, tg := range w.Targets {
			seen[tg]++
			require.True(t, in[tg], "a target is in its own window")
		}
		require.Equal(t, 0, w.Context[0], "window %d shows the request", k)
		if k > 0 {
			require.Less(t, w.Context[1], w.Targets[0], "window %d overlaps the one before", k)
		}
	}
	require.Len(t, seen, len(cs))
	for tg, n := range seen {
		require.Equal(t, 1, n, "target %d", tg)
	}
}

func TestWindowsCharBudgetAndExcerpts(t *testing.T) {
	t.Parallel()
	steps := longTrace(9, func(i int) string { return strings.Repeat("y", 50_000) })
	cs := Chunks(steps)
	lim := Limits{MaxChunks: 80, MaxChars: 200_000, Overlap: 20}
	ws := Windows(steps, cs, allTargets(cs), lim)
	for _, w := range ws {
		chars := 0
		for _, c := range w.Context {
			chars += ChunkChars(steps, cs[c])
		}
		require.LessOrEqual(t, chars, lim.MaxChars)
	}
	require.Greater(t, len(ws), 2)
	// With excerpts, the same trace fits one window, its big chunks marked.
	lim.ExcerptChars = 8_000
	ws = Windows(steps, cs, allTargets(cs), lim)
	require.Len(t, ws, 1)
	require.Len(t, ws[0].Excerpted, 8)
	require.False(t, ws[0].Excerpted[0])
	// A single target above every budget still gets a window.
	huge := longTrace(3, func(i int) string { return strings.Repeat("z", 300_000) })
	hc := Chunks(huge)
	ws = Windows(huge, hc, []int{1, 2}, Limits{MaxChunks: 80, MaxChars: 200_000})
	require.Len(t, ws, 2)
	require.Equal(t, []int{1}, ws[0].Targets)
	require.Equal(t, []int{0, 2}, ws[1].Context, "the request is kept even so")
	// Only the given targets are labeled; the rest is context.
	ws = Windows(steps, cs, []int{4}, lim)
	require.Len(t, ws, 1)
	require.Equal(t, []int{4}, ws[0].Targets)
	require.Contains(t, ws[0].Context, 3)
}

func TestExcerpt(t *testing.T) {
	t.Parallel()
	require.Equal(t, "short", Excerpt("short", 100))
	s := strings.Repeat("a", 600) + strings.Repeat("b", 400)
	e := Excerpt(s, 300)
	require.True(t, strings.HasPrefix(e, strings.Repeat("a", 200)))
	require.True(t, strings.HasSuffix(e, strings.Repeat("b", 100)))
	require.Contains(t, e, "700 characters omitted")
}

func TestPrompt(t *testing.T) {
	t.Parallel()
	ins := Instructions()
	for _, f := range Vocabulary {
		require.Contains(t, ins, "- "+f.Name+" (")
		for _, v := range f.Values {
			require.Contains(t, ins, "    "+v.Name+": "+v.Meaning)
		}
	}
	steps := trace()
	steps[6].Content = strings.Repeat("r", 20_000)
	cs := Chunks(steps)
	lim := DefaultLimits
	ws := Windows(steps, cs, []int{3}, lim)
	require.Len(t, ws, 1)
	out := RenderWindow(steps, cs, ws[0], lim)
	require.Contains(t, out, `<chunk id="`+cs[1].ID+`" actor="agent" kind="tool_call">`)
	require.Contains(t, out, `[tool call] lookup_order {"id":"1182"}`)
	require.Contains(t, out, "[tool result]\n{\"status\":\"delivered\"}")
	require.Contains(t, out, "characters omitted")
	require.Less(t, len(out), 12_000, "the big answer is excerpted")
	require.Equal(t, out, RenderWindow(steps, cs, ws[0], lim), "the cached prefix is deterministic")
	require.Contains(t, TargetPrompt(cs[3]), cs[3].ID)
}
