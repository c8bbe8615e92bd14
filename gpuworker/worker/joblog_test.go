package worker

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestLogTailKeepsLast2000Chars(t *testing.T) {
	tail := NewLogTail(ErrorTailChars)
	require.Equal(t, "", tail.String())
	tail.Write([]byte("short"))
	require.Equal(t, "short", tail.String())

	var all strings.Builder
	all.WriteString("short")
	for i := range 3000 {
		line := strings.Repeat("é", i%7) + "line " + strings.Repeat("x", i%13) + "\n"
		all.WriteString(line)
		tail.Write([]byte(line))
	}
	want := []rune(all.String())
	got := tail.String()
	require.True(t, utf8.ValidString(got))
	require.Equal(t, ErrorTailChars, utf8.RuneCountInString(got))
	require.Equal(t, string(want[len(want)-ErrorTailChars:]), got)

	// A write larger than the buffer keeps its own end.
	big := strings.Repeat("ab", 5000) + "END"
	tail.Write([]byte(big))
	require.Equal(t, big[len(big)-ErrorTailChars:], tail.String())
}

// Everything logged for a job reaches both the process log (with the job's
// attributes) and the job's tail.
func TestJobLoggerTees(t *testing.T) {
	var process bytes.Buffer
	base := slog.New(slog.NewTextHandler(&process, nil))
	log, tail := jobLogger(base, "model_id", "m1")
	log.Info("step 1/2 loss 0.6931")
	log.With("k", "v").Error("training failed", "error", "boom")
	require.Contains(t, process.String(), "model_id=m1")
	require.Contains(t, process.String(), `msg="step 1/2 loss 0.6931"`)
	require.Contains(t, tail.String(), `msg="step 1/2 loss 0.6931"`)
	require.Contains(t, tail.String(), `msg="training failed" k=v error=boom`)
	require.True(t, strings.HasSuffix(strings.TrimSpace(tail.String()), "error=boom"))
}
