package formats

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// memoRecords reads the OTel testdata as the live receiver stores it: one
// record per span and per GenAI log record, in file order.
func memoRecords(t *testing.T) map[string][]RawSpan {
	t.Helper()
	byFile := map[string][]RawSpan{}
	files, err := filepath.Glob("testdata/otel_*")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		bodies := [][]byte{data}
		if strings.HasSuffix(f, ".jsonl") {
			bodies = nil
			sc := bufio.NewScanner(bytes.NewReader(data))
			sc.Buffer(nil, 16<<20)
			for sc.Scan() {
				if line := bytes.TrimSpace(sc.Bytes()); len(line) > 0 {
					bodies = append(bodies, append([]byte(nil), line...))
				}
			}
		}
		for _, b := range bodies {
			if spans, err := SplitSpans(b); err == nil {
				byFile[f] = append(byFile[f], spans...)
			}
			if logs, _, _, err := SplitLogs(b); err == nil {
				byFile[f] = append(byFile[f], logs...)
			}
		}
		require.NotEmpty(t, byFile[f], f)
	}
	return byFile
}

// TestSpanMemoRebuildsAsWithout: a conversation rebuilt through a memo, as
// the live receiver does on every export (each export one more record, a
// record re-sent changed, the same records again), is the conversation
// rebuilt from its records alone, for every OTel dialect in testdata (log
// records joined to their spans included).
func TestSpanMemoRebuildsAsWithout(t *testing.T) {
	for f, recs := range memoRecords(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			byTrace := map[string][]RawSpan{}
			var order []string
			for _, r := range recs {
				if byTrace[r.TraceID] == nil {
					order = append(order, r.TraceID)
				}
				byTrace[r.TraceID] = append(byTrace[r.TraceID], r)
			}
			built := 0
			for _, tid := range order {
				trace := byTrace[tid]
				memo := NewSpanMemo()
				check := func(recs []RawSpan) {
					t.Helper()
					want, wantLLM, wantErr := RebuildConversation(recs, tid, nil, nil)
					got, gotLLM, gotErr := RebuildConversation(recs, tid, nil, memo)
					require.Equal(t, wantErr, gotErr)
					require.Equal(t, wantLLM, gotLLM)
					require.Equal(t, want, got)
					if wantLLM {
						built++
					}
				}
				for k := 1; k <= len(trace); k++ {
					check(trace[:k])
				}
				check(trace)
				// The same records in another order: the memo renumbers
				// arrival as a fresh decode would.
				rev := make([]RawSpan, len(trace))
				for i, r := range trace {
					rev[len(trace)-1-i] = r
				}
				check(rev)
				// A record re-sent changed is decoded again, not taken
				// from the memo.
				changed := append([]RawSpan(nil), trace...)
				for i, r := range changed {
					if bytes.Contains(r.JSON, []byte(`"name"`)) && !r.IsLog() {
						changed[i].JSON = bytes.Replace(r.JSON, []byte(`"name"`), []byte(`"name":"renamed","was"`), 1)
						break
					}
				}
				check(changed)
				check(trace)
				require.LessOrEqual(t, memo.Size(), recordBytes(trace)+recordBytes(changed), "the memo keeps the records last given")
			}
			require.Positive(t, built, "some trace of %s has LLM calls", f)
		})
	}
}

func recordBytes(recs []RawSpan) int {
	n := 0
	for _, r := range recs {
		n += len(r.JSON)
	}
	return n
}

// TestSpanMemoKeepsOnlyTheRecordsGiven: records no longer given are dropped
// from the memo, so it holds what the conversation holds.
func TestSpanMemoKeepsOnlyTheRecordsGiven(t *testing.T) {
	for _, recs := range memoRecords(t) {
		memo := NewSpanMemo()
		_, _, err := RebuildConversation(recs[:1], recs[0].TraceID, nil, memo)
		require.NoError(t, err)
		require.Equal(t, len(recs[0].JSON), memo.Size())
		if len(recs) > 1 && recs[1].TraceID == recs[0].TraceID {
			_, _, err = RebuildConversation(recs[1:2], recs[0].TraceID, nil, memo)
			require.NoError(t, err)
			require.Equal(t, len(recs[1].JSON), memo.Size())
		}
	}
}

// TestSpanMemoJoinKeepsItsSteps: a conversation whose history holds a tool
// result with no call (finishSteps marks it) grows call by call through a
// memo; the steps each rebuild resumes from are the joined ones, not the
// finished ones, so every rebuild is the conversation rebuilt alone.
func TestSpanMemoJoinKeepsItsSteps(t *testing.T) {
	const tid = "0102030405060708090a0b0c0d0e0f10"
	msg := func(role, typ string, kv ...any) map[string]any {
		part := map[string]any{"type": typ}
		for i := 0; i < len(kv); i += 2 {
			part[kv[i].(string)] = kv[i+1]
		}
		return map[string]any{"role": role, "parts": []any{part}}
	}
	history := []any{
		msg("user", "text", "content", "Refund order 7?"),
		msg("tool", "tool_call_response", "id", "orphan_1", "response", "earlier result"),
	}
	var recs []RawSpan
	for c := range 4 {
		out := []any{msg("assistant", "text", "content", fmt.Sprintf("step %d", c))}
		if c == 0 {
			out = []any{} // the tool result stays the conversation's last step
		}
		in, _ := json.Marshal(history)
		o, _ := json.Marshal(out)
		start := 1_700_000_000_000_000_000 + int64(c)*1_000_000_000
		body, _ := json.Marshal(map[string]any{"resourceSpans": []any{map[string]any{"scopeSpans": []any{map[string]any{"spans": []any{map[string]any{
			"traceId": tid, "spanId": fmt.Sprintf("00000000000000%02x", c+1), "name": "chat", "startTimeUnixNano": start, "endTimeUnixNano": start + 1000,
			"attributes": []any{
				map[string]any{"key": "gen_ai.operation.name", "value": map[string]any{"stringValue": "chat"}},
				map[string]any{"key": "gen_ai.input.messages", "value": map[string]any{"stringValue": string(in)}},
				map[string]any{"key": "gen_ai.output.messages", "value": map[string]any{"stringValue": string(o)}},
			}}}}}}}})
		split, err := SplitSpans(body)
		require.NoError(t, err)
		recs = append(recs, split...)
		history = append(history, out...)
		history = append(history, msg("user", "text", "content", fmt.Sprintf("and then %d?", c)))
	}
	memo := NewSpanMemo()
	for k := 1; k <= len(recs); k++ {
		want, _, err := RebuildConversation(recs[:k], tid, nil, nil)
		require.NoError(t, err)
		got, _, err := RebuildConversation(recs[:k], tid, nil, memo)
		require.NoError(t, err)
		require.Equal(t, want, got, "after call %d", k)
	}
	want, _, err := RebuildTrace(recs)
	require.NoError(t, err)
	require.Equal(t, "orphan_1", want.Steps[1].Metadata["unmatched_tool_call_id"], "the case this test is for")
}
