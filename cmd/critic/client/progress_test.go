package client

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestProgressBarOnATerminalPlainLinesOtherwise(t *testing.T) {
	t.Parallel()
	var tty bytes.Buffer
	p := NewProgress(&tty, true, 2, 2<<20)
	p.Advance(1<<20, 10)
	p.FileDone("imported   a.jsonl: 10 traces (stash), 0 unchanged")
	p.FileDone("failed     b.jsonl: line 3: bad")
	p.Finish()
	out := tty.String()
	require.Contains(t, out, "\r\033[K")
	require.Contains(t, out, "2/2 files  10 traces  1.0 MiB/2.0 MiB")
	require.Contains(t, out, "MB/s")
	require.Contains(t, out, "failed     b.jsonl: line 3: bad\n", "failures stay on screen above the bar")
	require.NotContains(t, out, "imported   a.jsonl", "successes only move the bar")

	var plain bytes.Buffer
	p = NewProgress(&plain, false, 2, 2<<20)
	p.Advance(1<<20, 10)
	p.FileDone("imported   a.jsonl: 10 traces (stash), 0 unchanged")
	p.FileDone("failed     b.jsonl: line 3: bad")
	p.Finish()
	require.Equal(t, "imported   a.jsonl: 10 traces (stash), 0 unchanged\nfailed     b.jsonl: line 3: bad\n", plain.String())
	require.False(t, strings.Contains(plain.String(), "\r"))
}
