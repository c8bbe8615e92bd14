package labels

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/criticml/critic/domain"
)

// Limits bound the context one labeling call sees (spec 001:
// STEP_LABELING_MAX_CHUNKS, STEP_LABELING_MAX_CHARS). They are provider
// context budgets, not limits on a recording: every target is still
// labeled, in as many windows as it takes.
type Limits struct {
	MaxChunks int // chunks in one window (80)
	MaxChars  int // characters of chunk text in one window (200,000)
	// Overlap is how many chunks before a window's first target it shows
	// as context (bounded, overlapping context).
	Overlap int
	// ExcerptChars is what an oversized chunk is cut to (head and tail,
	// explicitly marked), so one huge tool output cannot crowd out the rest.
	ExcerptChars int
}

// DefaultLimits are the spec's budgets.
var DefaultLimits = Limits{MaxChunks: 80, MaxChars: 200_000, Overlap: 20, ExcerptChars: 8_000}

// Window is the context of one or more labeling calls: the chunks shown
// (indices into the trace's chunks, in order), the targets labeled with it
// (each target in exactly one window) and which shown chunks are excerpts.
// Context is the cached prompt prefix; each call then names one target.
type Window struct {
	Context   []int
	Targets   []int
	Excerpted map[int]bool
}

// ChunkChars is the size of a chunk's text as a labeler renders it: its
// steps' contents, tool names and tool inputs.
func ChunkChars(steps []domain.Step, c Chunk) int {
	n := 0
	for _, i := range c.Steps {
		s := steps[i]
		n += utf8.RuneCountInString(s.Content) + len(s.ToolName)
		if len(s.ToolInput) > 0 {
			b, _ := json.Marshal(s.ToolInput)
			n += len(b)
		}
	}
	return n
}

// Windows plans the labeling of targets (chunk indices, ascending) within
// lim. A window starts up to Overlap chunks before its first target (the
// overlap is reserved first), then grows over later chunks while both budgets hold (taking every target it
// covers), and always shows the user request that precedes it when that
// request is outside the window, so the labeler knows what was asked.
// Chunks larger than ExcerptChars are shown as excerpts. A target that
// alone exceeds the budget still gets a window of its own.
func Windows(steps []domain.Step, chunks []Chunk, targets []int, lim Limits) []Window {
	if lim.MaxChunks <= 0 {
		lim = DefaultLimits
	}
	size := make([]int, len(chunks))
	excerpt := map[int]bool{}
	for i, c := range chunks {
		size[i] = ChunkChars(steps, c)
		if lim.ExcerptChars > 0 && size[i] > lim.ExcerptChars {
			size[i], excerpt[i] = lim.ExcerptChars, true
		}
	}
	var out []Window
	for k := 0; k < len(targets); {
		first := targets[k]
		// The request before the target, when it is not the target itself.
		req := -1
		for i := first - 1; i >= 0; i-- {
			if chunks[i].Actor == ActorUser {
				req = i
				break
			}
		}
		count, chars := 1, size[first]
		if req >= 0 {
			count, chars = count+1, chars+size[req]
		}
		start := first
		for start-1 >= 0 && first-(start-1) <= lim.Overlap && count+1 <= lim.MaxChunks && chars+size[start-1] <= lim.MaxChars {
			start--
			if start != req {
				count, chars = count+1, chars+size[start]
			}
		}
		end := first
		for end+1 < len(chunks) && count+1 <= lim.MaxChunks && chars+size[end+1] <= lim.MaxChars {
			end++
			count, chars = count+1, chars+size[end]
		}
		w := Window{Excerpted: map[int]bool{}}
		if req >= 0 && req < start {
			w.Context = append(w.Context, req)
		}
		for i := start; i <= end; i++ {
			w.Context = append(w.Context, i)
		}
		for _, i := range w.Context {
			if excerpt[i] {
				w.Excerpted[i] = true
			}
		}
		for ; k < len(targets) && targets[k] <= end; k++ {
			w.Targets = append(w.Targets, targets[k])
		}
		out = append(out, w)
	}
	return out
}

// ExcerptMarker separates the head and tail of an excerpted text; the
// labeler's prompt explains it, so the model knows text is missing.
const ExcerptMarker = "\n[… excerpt: %d characters omitted …]\n"

// Excerpt cuts s to about n characters, keeping its head and tail around an
// explicit marker; s itself when it fits.
func Excerpt(s string, n int) string {
	r := []rune(s)
	if n <= 0 || len(r) <= n {
		return s
	}
	head, tail := n*2/3, n/3
	return string(r[:head]) + fmt.Sprintf(ExcerptMarker, len(r)-head-tail) + string(r[len(r)-tail:])
}
