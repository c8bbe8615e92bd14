package client

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEncodeImportDecodesToTheSameRequest(t *testing.T) {
	t.Parallel()
	data := "{\"steps\":[{\"role\":\"user\",\"content\":\"a \\\"quote\\\" <b>&\u2028 tab\\t\"}]}\n\x01\r\n{\"x\":\"é\"}\n"
	body := EncodeImport("stash", []byte(data), "my-agent")
	require.Len(t, body, EncodedSize("stash", []byte(data), "my-agent"))
	var req struct {
		Format, Data string
		SourceID     string `json:"source_id"`
	}
	require.NoError(t, json.Unmarshal(body, &req))
	require.Equal(t, "stash", req.Format)
	require.Equal(t, data, req.Data)
	require.Equal(t, "my-agent", req.SourceID)
}

func TestSplitKeepsTracesWholeAndMapsLines(t *testing.T) {
	t.Parallel()
	var lines []string
	for i := range 200 {
		lines = append(lines, fmt.Sprintf(`{"id":"t%d","steps":[{"role":"user","content":"%s"}]}`, i, strings.Repeat("x", 50+i)))
		if i%7 == 0 {
			lines = append(lines, "") // blank lines keep the numbering
		}
	}
	data := []byte(strings.Join(lines, "\n") + "\n")
	limit := 4096
	chunks, err := Split("stash", data, "", limit)
	require.NoError(t, err)
	require.Greater(t, len(chunks), 3)
	var got []string
	var bytes int64
	for _, c := range chunks {
		require.LessOrEqual(t, EncodedSize("stash", c.Data, ""), limit)
		cl := strings.Split(strings.TrimSuffix(string(c.Data), "\n"), "\n")
		require.Len(t, c.Lines, len(cl))
		for i, l := range cl {
			require.Equal(t, lines[c.InputLine(i+1)-1], l, "chunk line %d maps to its input line", i+1)
		}
		got = append(got, cl...)
		bytes += c.Bytes
	}
	var want []string
	for _, l := range lines {
		if l != "" {
			want = append(want, l)
		}
	}
	require.Equal(t, want, got, "every trace once, in order")
	require.Equal(t, int64(len(data))-int64(strings.Count(string(data), "\n\n")), bytes)

	// One line over the limit cannot be sent.
	_, err = Split("stash", []byte(`{"steps":[{"role":"user","content":"`+strings.Repeat("y", 5000)+`"}]}`+"\n{}\n"), "", limit)
	var tl *TooLargeError
	require.ErrorAs(t, err, &tl)
	require.Contains(t, err.Error(), "line 1")

	// A session file is one trace: never cut.
	_, err = Split("claude_code", data, "", limit)
	require.ErrorAs(t, err, &tl)
}

func TestSplitGroupsLangSmithRunsByTrace(t *testing.T) {
	t.Parallel()
	var lines []string
	for i := range 60 {
		lines = append(lines, fmt.Sprintf(`{"id":"r%d","trace_id":"tr%d","run_type":"llm","pad":"%s"}`, i, i%5, strings.Repeat("p", 100)))
	}
	data := []byte(strings.Join(lines, "\n"))
	chunks, err := Split("langsmith", data, "", 4000)
	require.NoError(t, err)
	require.Greater(t, len(chunks), 1)
	where := map[string]int{}
	for ci, c := range chunks {
		for l := range strings.SplitSeq(strings.TrimSpace(string(c.Data)), "\n") {
			var r struct {
				TraceID string `json:"trace_id"`
			}
			require.NoError(t, json.Unmarshal([]byte(l), &r))
			if prev, ok := where[r.TraceID]; ok {
				require.Equal(t, prev, ci, "trace %s is in one request", r.TraceID)
			}
			where[r.TraceID] = ci
		}
	}
	require.Len(t, where, 5)
}

func TestCheckUTF8NamesTheLine(t *testing.T) {
	t.Parallel()
	require.NoError(t, CheckUTF8([]byte("ok\né\n")))
	err := CheckUTF8([]byte("ok\nfine\nbad \xff here\n"))
	require.ErrorContains(t, err, "line 3")
}
