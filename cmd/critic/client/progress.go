package client

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// Progress reports an upload: on a terminal a bar redrawn in place (files,
// traces, bytes, rate); otherwise one plain line per finished file, which
// is what a log or CI output wants.
type Progress struct {
	mu         sync.Mutex
	w          io.Writer
	tty        bool
	totalFiles int
	totalBytes int64
	files      int
	traces     int
	bytes      int64
	start      time.Time
	lastDraw   time.Time
	drawn      bool
}

// IsTerminal reports whether f is a character device (a terminal).
func IsTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// NewProgress reports to w; tty selects the bar.
func NewProgress(w io.Writer, tty bool, totalFiles int, totalBytes int64) *Progress {
	return &Progress{w: w, tty: tty, totalFiles: totalFiles, totalBytes: totalBytes, start: time.Now()}
}

// Advance counts bytes sent (a chunk done).
func (p *Progress) Advance(bytes int64, traces int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.bytes += bytes
	p.traces += traces
	if p.tty && time.Since(p.lastDraw) > 100*time.Millisecond {
		p.draw()
	}
}

// FileDone reports a finished file with a one-line outcome.
func (p *Progress) FileDone(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.files++
	if p.tty {
		if line != "" && strings.HasPrefix(line, "failed") {
			p.clear()
			fmt.Fprintln(p.w, line)
		}
		p.draw()
		return
	}
	if line != "" {
		fmt.Fprintln(p.w, line)
	}
}

// Finish removes the bar.
func (p *Progress) Finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty && p.drawn {
		p.draw()
		fmt.Fprintln(p.w)
		p.drawn = false
	}
}

// Rate is the throughput so far in MB/s.
func (p *Progress) Rate() float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return float64(p.bytes) / 1e6 / time.Since(p.start).Seconds()
}

func (p *Progress) clear() {
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

func (p *Progress) draw() {
	p.lastDraw = time.Now()
	frac := 0.0
	if p.totalBytes > 0 {
		frac = min(float64(p.bytes)/float64(p.totalBytes), 1)
	}
	const width = 24
	n := int(frac * width)
	bar := strings.Repeat("█", n) + strings.Repeat("░", width-n)
	el := time.Since(p.start).Seconds()
	rate := 0.0
	if el > 0 {
		rate = float64(p.bytes) / 1e6 / el
	}
	fmt.Fprintf(p.w, "\r\033[K%s %3.0f%%  %d/%d files  %d traces  %s/%s  %.1f MB/s",
		bar, frac*100, p.files, p.totalFiles, p.traces, HumanBytes(p.bytes), HumanBytes(p.totalBytes), rate)
	p.drawn = true
}

// HumanBytes prints a byte count the way people read it.
func HumanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
