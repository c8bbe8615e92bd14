package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// sessionRecord is one line of a generated native session file and the step
// the adapter should make of it (nil: the line adds no step).
type sessionRecord struct {
	line string
	step *wantStep
}

// wantStep is what a user should see of a step in GET /traces/{id}.
type wantStep struct {
	role, content, toolName, toolCallID, timestamp string
}

// sessionFile joins records into a JSONL snapshot as the agent wrote it.
func sessionFile(recs []sessionRecord) string {
	var b strings.Builder
	for _, r := range recs {
		b.WriteString(r.line)
		b.WriteByte('\n')
	}
	return b.String()
}

func wantSteps(recs []sessionRecord) []wantStep {
	var out []wantStep
	for _, r := range recs {
		if r.step != nil {
			out = append(out, *r.step)
		}
	}
	return out
}

// mustJSON encodes v as the agents write their files: JavaScript's
// JSON.stringify and serde_json do not escape <, > and &.
func mustJSON(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// sessionClock hands out the increasing timestamps a session records.
type sessionClock struct{ t time.Time }

func (c *sessionClock) next() string {
	c.t = c.t.Add(1700 * time.Millisecond)
	return c.t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// claudeCodeSession generates a Claude Code transcript
// (~/.claude/projects/<project>/<session>.jsonl) of `turns` turns. Each turn
// is a user prompt, an assistant message streamed as two records (text, then
// a Read tool_use), its tool_result, a parallel Grep + Bash call (one
// assistant message, two records) with two tool_results, an Edit and its
// result, a final answer and a turn_duration system record. toolOutput, when
// set, returns the Read result for a turn (the large-session test makes it a
// big file dump).
func claudeCodeSession(sessionID string, turns int, toolOutput func(turn int) string) []sessionRecord {
	clock := &sessionClock{t: time.Date(2026, 3, 14, 9, 26, 0, 0, time.UTC)}
	var out []sessionRecord
	var parent any
	n := 0
	add := func(typ string, msg map[string]any, extra map[string]any, st *wantStep) {
		n++
		uuid := fmt.Sprintf("%08x-7c1e-4d2a-9b3f-%012x", n, n*7919)
		ts := clock.next()
		rec := map[string]any{"parentUuid": parent, "isSidechain": false, "userType": "external", "cwd": "/home/dev/shop",
			"sessionId": sessionID, "version": "2.1.14", "gitBranch": "fix/coupon-shipping", "type": typ, "uuid": uuid, "timestamp": ts}
		if msg != nil {
			rec["message"] = msg
		}
		maps.Copy(rec, extra)
		if st != nil {
			st.timestamp = ts
		}
		out = append(out, sessionRecord{line: mustJSON(rec), step: st})
		parent = uuid
	}
	assistant := func(msgID string, block map[string]any, st *wantStep) {
		add("assistant", map[string]any{"model": "claude-sonnet-4-5-20250929", "id": msgID, "type": "message", "role": "assistant",
			"content": []any{block}, "stop_reason": nil, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": 4, "cache_read_input_tokens": 18211, "output_tokens": 212}},
			map[string]any{"requestId": "req_" + msgID}, st)
	}
	toolUse := func(msgID, id, name string, input map[string]any) {
		assistant(msgID, map[string]any{"type": "tool_use", "id": id, "name": name, "input": input},
			&wantStep{role: "assistant", toolName: name, toolCallID: id})
	}
	result := func(id, name, content string, structured any) {
		add("user", map[string]any{"role": "user", "content": []any{map[string]any{"tool_use_id": id, "type": "tool_result", "content": content}}},
			map[string]any{"toolUseResult": structured}, &wantStep{role: "tool", content: content, toolName: name, toolCallID: id})
	}

	out = append(out, sessionRecord{line: mustJSON(map[string]any{"type": "file-history-snapshot", "messageId": "snap-0",
		"snapshot":         map[string]any{"messageId": "snap-0", "trackedFileBackups": map[string]any{}, "timestamp": "2026-03-14T09:25:59.000Z"},
		"isSnapshotUpdate": false})})
	for i := range turns {
		file := fmt.Sprintf("/home/dev/shop/cart/total_%d.go", i)
		prompt := fmt.Sprintf("Turn %d: the checkout total is wrong when a coupon and free shipping combine — fix %s and keep \"TestTotal\" green.", i, file)
		add("user", map[string]any{"role": "user", "content": prompt}, nil, &wantStep{role: "user", content: prompt})

		msgA, msgB, msgC, msgD := fmt.Sprintf("msg_%02d_a", i), fmt.Sprintf("msg_%02d_b", i), fmt.Sprintf("msg_%02d_c", i), fmt.Sprintf("msg_%02d_d", i)
		look := fmt.Sprintf("I'll read %s first to see how the discount is applied.", file)
		assistant(msgA, map[string]any{"type": "text", "text": look}, &wantStep{role: "assistant", content: look})
		readID := fmt.Sprintf("toolu_01Read%04d", i)
		toolUse(msgA, readID, "Read", map[string]any{"file_path": file})
		body := fmt.Sprintf("     1\tpackage cart\n     2\t\n     3\tfunc Total(items []Item, c Coupon) int {\n     4\t\treturn sum(items) - c.Off%d\n     5\t}\n", i)
		if toolOutput != nil {
			body = toolOutput(i)
		}
		result(readID, "Read", body, map[string]any{"type": "text", "file": map[string]any{"filePath": file, "content": body, "numLines": strings.Count(body, "\n"), "startLine": 1}})

		// A parallel tool call: one assistant message, two tool_use records,
		// then one tool_result record each.
		grepID, bashID := fmt.Sprintf("toolu_01Grep%04d", i), fmt.Sprintf("toolu_01Bash%04d", i)
		toolUse(msgB, grepID, "Grep", map[string]any{"pattern": "FreeShipping", "path": "/home/dev/shop", "output_mode": "content"})
		toolUse(msgB, bashID, "Bash", map[string]any{"command": "go test ./cart/...", "description": "Run the cart tests"})
		grepOut := fmt.Sprintf("cart/shipping.go:12:\tif c.FreeShipping && total > %d {", 50+i)
		result(grepID, "Grep", grepOut, map[string]any{"mode": "content", "numFiles": 1, "content": grepOut})
		testOut := fmt.Sprintf("--- FAIL: TestTotal/coupon_and_free_shipping (0.00s)\n    total_test.go:41: got %d, want %d\nFAIL", 1990+i, 1890+i)
		result(bashID, "Bash", testOut, map[string]any{"stdout": testOut, "stderr": "", "interrupted": false, "isImage": false})

		editID := fmt.Sprintf("toolu_01Edit%04d", i)
		toolUse(msgC, editID, "Edit", map[string]any{"file_path": file, "old_string": fmt.Sprintf("c.Off%d", i), "new_string": "c.Discount(items)"})
		editOut := fmt.Sprintf("The file %s has been updated.", file)
		result(editID, "Edit", editOut, map[string]any{"filePath": file, "oldString": fmt.Sprintf("c.Off%d", i), "newString": "c.Discount(items)"})

		done := fmt.Sprintf("Fixed turn %d: the coupon is now applied before the free-shipping threshold, and `go test ./cart/...` passes.", i)
		assistant(msgD, map[string]any{"type": "text", "text": done}, &wantStep{role: "assistant", content: done})
		add("system", nil, map[string]any{"subtype": "turn_duration", "durationMs": 18234 + i, "isMeta": false}, nil)
	}
	return out
}

// codexRollout generates a Codex CLI rollout (~/.codex/sessions/**/rollout-*.jsonl):
// session_meta, the harness's developer and environment messages, then per
// turn a user message (with its event_msg echo), a reasoning summary, a
// parallel pair of shell function_calls and their outputs, an apply_patch
// custom tool call, and the assistant's answer (with its event_msg echo).
func codexRollout(sessionID string, turns int) []sessionRecord {
	clock := &sessionClock{t: time.Date(2025, 10, 29, 0, 59, 0, 0, time.UTC)}
	var out []sessionRecord
	add := func(typ string, payload map[string]any, st *wantStep) {
		ts := clock.next()
		if st != nil {
			st.timestamp = ts
		}
		out = append(out, sessionRecord{line: mustJSON(map[string]any{"timestamp": ts, "type": typ, "payload": payload}), step: st})
	}
	text := func(kind, s string) []any { return []any{map[string]any{"type": kind, "text": s}} }

	add("session_meta", map[string]any{"id": sessionID, "timestamp": "2025-10-29T00:59:00.000Z", "cwd": "/home/dev/shop", "originator": "codex_cli_rs",
		"cli_version": "0.46.0", "instructions": nil, "source": "cli", "model_provider": "openai",
		"git": map[string]any{"commit_hash": "4f1c2a9", "branch": "main", "repository_url": "git@example.com:dev/shop.git"}}, nil)
	perm := "<permissions instructions>Filesystem sandboxing: workspace-write. Network: restricted.</permissions instructions>"
	add("response_item", map[string]any{"type": "message", "role": "developer", "content": text("input_text", perm)}, &wantStep{role: "system", content: perm})
	env := "<environment_context>\n  <cwd>/home/dev/shop</cwd>\n  <shell>bash</shell>\n</environment_context>"
	add("response_item", map[string]any{"type": "message", "role": "user", "content": text("input_text", env)}, &wantStep{role: "system", content: env})
	for i := range turns {
		prompt := fmt.Sprintf("Turn %d: make `go test ./cart/...` pass; the coupon total is off by one cent.", i)
		add("response_item", map[string]any{"type": "message", "role": "user", "content": text("input_text", prompt)}, &wantStep{role: "user", content: prompt})
		add("event_msg", map[string]any{"type": "user_message", "message": prompt, "kind": "plain"}, nil)
		if i == 0 {
			add("turn_context", map[string]any{"cwd": "/home/dev/shop", "approval_policy": "on-request", "model": "gpt-5-codex", "effort": "high", "summary": "auto"}, nil)
		}
		thought := fmt.Sprintf("**Locating the rounding in turn %d**", i)
		add("response_item", map[string]any{"type": "reasoning", "summary": []any{map[string]any{"type": "summary_text", "text": thought}},
			"content": nil, "encrypted_content": "gAAAAABo" + strings.Repeat("x", 40)}, &wantStep{role: "assistant", content: thought})

		// Parallel shell calls, then both outputs.
		c1, c2 := fmt.Sprintf("call_%02d_rg", i), fmt.Sprintf("call_%02d_test", i)
		for _, c := range []struct{ id, cmd string }{{c1, "rg -n Round cart"}, {c2, "go test ./cart/..."}} {
			args := mustJSON(map[string]any{"command": []any{"bash", "-lc", c.cmd}, "workdir": "/home/dev/shop", "timeout_ms": 120000})
			add("response_item", map[string]any{"type": "function_call", "name": "shell", "arguments": args, "call_id": c.id},
				&wantStep{role: "assistant", toolName: "shell", toolCallID: c.id})
		}
		rg := fmt.Sprintf("cart/round.go:%d:\treturn int(math.Floor(x))", 10+i)
		tst := fmt.Sprintf("--- FAIL: TestCouponTotal (0.00s)\n    round_test.go:%d: got 1999, want 2000\nFAIL\tshop/cart\t0.01s", 20+i)
		for _, o := range []struct{ id, s string }{{c1, rg}, {c2, tst}} {
			add("response_item", map[string]any{"type": "function_call_output", "call_id": o.id,
				"output": mustJSON(map[string]any{"output": o.s, "metadata": map[string]any{"exit_code": 1, "duration_seconds": 0.4}})},
				&wantStep{role: "tool", content: o.s, toolName: "shell", toolCallID: o.id})
		}
		patch := fmt.Sprintf("*** Begin Patch\n*** Update File: cart/round.go\n@@\n-\treturn int(math.Floor(x))\n+\treturn int(math.Round(x)) // turn %d\n*** End Patch", i)
		pid := fmt.Sprintf("call_%02d_patch", i)
		add("response_item", map[string]any{"type": "custom_tool_call", "status": "completed", "call_id": pid, "name": "apply_patch", "input": patch},
			&wantStep{role: "assistant", toolName: "apply_patch", toolCallID: pid})
		patched := "Success. Updated the following files:\nM cart/round.go\n"
		add("response_item", map[string]any{"type": "custom_tool_call_output", "call_id": pid,
			"output": mustJSON(map[string]any{"output": patched, "metadata": map[string]any{"exit_code": 0, "duration_seconds": 0.0}})},
			&wantStep{role: "tool", content: patched, toolName: "apply_patch", toolCallID: pid})
		answer := fmt.Sprintf("Turn %d done: totals now round half up, and the cart tests pass.", i)
		add("response_item", map[string]any{"type": "message", "role": "assistant", "content": text("output_text", answer)}, &wantStep{role: "assistant", content: answer})
		add("event_msg", map[string]any{"type": "agent_message", "message": answer}, nil)
		add("event_msg", map[string]any{"type": "token_count", "info": map[string]any{"total_token_usage": map[string]any{"input_tokens": 9000 + i}}}, nil)
	}
	return out
}

// importAs posts an import and requires 200, failing t (a subtest) rather
// than the instance's test.
func importAs(t *testing.T, in *instance, key, format, data string) []string {
	t.Helper()
	r := in.do("POST", "/api/v1/rm/traces/import", key, map[string]any{"format": format, "data": data})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	var out struct {
		TraceIDs []string `json:"trace_ids"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &out))
	return out.TraceIDs
}

func strOf(v any) string {
	s, _ := v.(string)
	return s
}

// requireSteps checks the steps a user sees against what the session says.
func requireSteps(t *testing.T, want []wantStep, got []map[string]any) {
	t.Helper()
	require.Len(t, got, len(want))
	for i, w := range want {
		g := got[i]
		require.Equal(t, float64(i), g["index"], "step %d", i)
		require.Equal(t, w.role, g["role"], "step %d role", i)
		require.Equal(t, w.content, strOf(g["content"]), "step %d content", i)
		require.Equal(t, w.toolName, strOf(g["tool_name"]), "step %d tool_name", i)
		require.Equal(t, w.toolCallID, strOf(g["tool_call_id"]), "step %d tool_call_id", i)
		meta, _ := g["metadata"].(map[string]any)
		require.Equal(t, w.timestamp, strOf(meta["timestamp"]), "step %d metadata.timestamp", i)
	}
}

func stepIDs(d traceDetail) []string {
	out := make([]string, len(d.Steps))
	for i, s := range d.Steps {
		out[i] = s["id"].(string)
	}
	return out
}

// TestSessionSyncThroughTheAPI uploads growing snapshots of a Claude Code
// session and of a Codex rollout the way the recording hooks do, and checks
// spec 001's sync rules: a grown snapshot appends steps and keeps step ids and
// review comments; a duplicate or older snapshot changes nothing; a divergent
// one is a 409 trace_sync_error that leaves the trace and its review as they
// were.
func TestSessionSyncThroughTheAPI(t *testing.T) {
	in := startServe(t)
	key := in.newUser("reviewer", false)

	cases := []struct {
		format, sessionID, agent string
		records                  []sessionRecord
		// editLine changes one message's text in a record line.
		editLine func(string) string
	}{
		{
			format: "claude_code", sessionID: "7d3f1c2e-5a8b-4c6d-9e0f-1a2b3c4d5e6f", agent: "claude-code",
			records: claudeCodeSession("7d3f1c2e-5a8b-4c6d-9e0f-1a2b3c4d5e6f", 4, nil),
			editLine: func(s string) string {
				return strings.Replace(s, "the checkout total is wrong", "the checkout total is right", 1)
			},
		},
		{
			format: "codex", sessionID: "0199a3c4-7e21-7b90-a1d2-3c4d5e6f7a8b", agent: "codex",
			records: codexRollout("0199a3c4-7e21-7b90-a1d2-3c4d5e6f7a8b", 4),
			editLine: func(s string) string {
				return strings.Replace(s, "the coupon total is off by one cent", "the coupon total is off by two cents", 1)
			},
		},
	}
	for _, c := range cases {
		t.Run(c.format, func(t *testing.T) {
			recs := c.records
			total := len(recs)
			n, k := total/2, total/4 // snapshot 1 holds N records, the grown one N+k, the file has more
			snap := func(m int) string { return sessionFile(recs[:m]) }
			revision := func(id string) int {
				var r int
				require.NoError(t, in.pool.QueryRow(context.Background(), "SELECT revision FROM rm_traces WHERE id = $1", id).Scan(&r))
				return r
			}

			// Snapshot 1.
			ids := importAs(t, in, key, c.format, snap(n))
			require.Len(t, ids, 1)
			id := ids[0]
			d1 := in.getTrace(t, key, id)
			require.Equal(t, c.sessionID, *d1.ExternalID)
			require.Equal(t, c.format, d1.SourceFormat)
			require.Equal(t, c.agent, d1.SourceID, "the source is the agent that wrote the session")
			want1 := wantSteps(recs[:n])
			require.NotEmpty(t, want1)
			requireSteps(t, want1, d1.Steps)
			require.Equal(t, len(want1), d1.StepCount)
			require.Equal(t, 1, revision(id))
			ids1 := stepIDs(d1)

			// A reviewer comments on an answer the agent gave.
			target := -1
			for i, w := range want1 {
				if w.role == "assistant" && w.toolName == "" && w.content != "" {
					target = i
				}
			}
			require.GreaterOrEqual(t, target, 0)
			r := in.do("POST", "/api/v1/rm/traces/"+id+"/annotations", key,
				map[string]any{"step_id": ids1[target], "rating": -1, "comment": "Claimed the tests pass without running them again."})
			require.Equal(t, http.StatusOK, r.Status, string(r.Body))
			annID := r.JSON(t)["id"].(string)
			requireAnnotation := func(d traceDetail) {
				t.Helper()
				require.Len(t, d.Annotations, 1)
				a := d.Annotations[0].(map[string]any)
				require.Equal(t, annID, a["id"])
				require.Equal(t, ids1[target], a["step_id"])
				require.Equal(t, float64(-1), a["rating"])
				require.Equal(t, "Claimed the tests pass without running them again.", a["comment"])
			}

			// The same snapshot again (detected with auto): nothing changes.
			events := in.eventCount()
			r = in.do("POST", "/api/v1/rm/traces/import", key, map[string]any{"format": "auto", "data": snap(n)})
			require.Equal(t, http.StatusOK, r.Status, string(r.Body))
			require.Equal(t, c.format, r.JSON(t)["format"], "auto detects the native format")
			require.Equal(t, []any{id}, r.JSON(t)["trace_ids"])
			require.Equal(t, events, in.eventCount(), "a duplicate snapshot is a no-op")
			require.Equal(t, ids1, stepIDs(in.getTrace(t, key, id)))
			require.Equal(t, 1, revision(id))

			// The grown snapshot appends and keeps ids and the review.
			require.Equal(t, []string{id}, importAs(t, in, key, c.format, snap(n+k)))
			d2 := in.getTrace(t, key, id)
			want2 := wantSteps(recs[:n+k])
			require.Greater(t, len(want2), len(want1))
			requireSteps(t, want2, d2.Steps)
			require.Equal(t, len(want2), d2.StepCount)
			require.Equal(t, ids1, stepIDs(d2)[:len(ids1)], "existing steps keep their ids")
			require.Equal(t, 2, revision(id))
			requireAnnotation(d2)
			list := in.do("GET", "/api/v1/rm/traces", key, nil).JSON(t)
			var summary map[string]any
			for _, s := range list["traces"].([]any) {
				if s.(map[string]any)["id"] == id {
					summary = s.(map[string]any)
				}
			}
			require.NotNil(t, summary)
			require.Equal(t, float64(len(want2)), summary["step_count"])
			require.Equal(t, float64(1), summary["negative_count"])
			ids2 := stepIDs(d2)
			before := in.do("GET", "/api/v1/rm/traces/"+id, key, nil)
			require.Equal(t, http.StatusOK, before.Status)

			// Duplicate and older snapshots: no-ops.
			events = in.eventCount()
			for name, data := range map[string]string{"duplicate": snap(n + k), "older": snap(n + k - 2), "first": snap(n), "much older": snap(n - 2)} {
				r := in.do("POST", "/api/v1/rm/traces/import", key, map[string]any{"format": c.format, "data": data})
				require.Equal(t, http.StatusOK, r.Status, "%s: %s", name, r.Body)
				require.Equal(t, []any{id}, r.JSON(t)["trace_ids"], name)
				require.Equal(t, events, in.eventCount(), "%s snapshot is a no-op", name)
			}
			require.Equal(t, ids2, stepIDs(in.getTrace(t, key, id)))
			require.Equal(t, 2, revision(id))

			// Divergent snapshots: a message in the middle was edited, with
			// and without new records after it.
			mid := -1
			for i := n / 3; i < n; i++ {
				if e := c.editLine(recs[i].line); e != recs[i].line {
					mid = i
					break
				}
			}
			require.GreaterOrEqual(t, mid, 0, "the edit applies to a record inside snapshot 1")
			for name, m := range map[string]int{"same length": n + k, "shorter": n, "longer": total} {
				edited := append([]sessionRecord(nil), recs[:m]...)
				edited[mid].line = c.editLine(edited[mid].line)
				data := sessionFile(edited)
				for _, format := range []string{c.format, "auto"} {
					r := in.do("POST", "/api/v1/rm/traces/import", key, map[string]any{"format": format, "data": data})
					require.Equal(t, http.StatusConflict, r.Status, "%s/%s: %s", name, format, r.Body)
					body := r.JSON(t)
					require.Equal(t, "trace_sync_error", body["code"], string(r.Body))
					require.NotEmpty(t, body["detail"])
					require.Equal(t, events, in.eventCount(), "a divergent snapshot stores nothing")
				}
			}
			after := in.do("GET", "/api/v1/rm/traces/"+id, key, nil)
			require.Equal(t, http.StatusOK, after.Status)
			require.JSONEq(t, string(before.Body), string(after.Body), "the trace and its review are untouched")
			require.Equal(t, 2, revision(id))
			requireAnnotation(in.getTrace(t, key, id))
			t.Logf("%s: %d records; snapshot 1 = %d records (%d steps), grown = %d records (%d steps)", c.format, total, n, len(want1), n+k, len(want2))

			// A hook that uploads after every record: each cut point of the
			// file appends exactly the new record's steps, ids kept.
			other := strings.Replace(c.sessionID, "-", "-0", 1)
			prev := []string{}
			for m := 1; m <= total; m++ {
				want := wantSteps(recs[:m])
				data := strings.ReplaceAll(snap(m), c.sessionID, other)
				reviewable := false
				for _, w := range want {
					reviewable = reviewable || w.role != "system"
				}
				if !reviewable {
					// The session has not started yet: nothing to review, nothing stored.
					events := in.eventCount()
					r := in.do("POST", "/api/v1/rm/traces/import", key, map[string]any{"format": c.format, "data": data})
					require.Equal(t, http.StatusUnprocessableEntity, r.Status, "cut after record %d: %s", m, r.Body)
					require.Equal(t, events, in.eventCount())
					continue
				}
				got := importAs(t, in, key, c.format, data)
				require.Len(t, got, 1)
				require.NotEqual(t, id, got[0])
				d := in.getTrace(t, key, got[0])
				requireSteps(t, want, d.Steps)
				ids := stepIDs(d)
				require.Equal(t, prev, ids[:len(prev)], "cut after record %d keeps the earlier step ids", m)
				prev = ids
			}
		})
	}
}

// TestNativeTranscriptUpload: the session recorders' upload path syncs like
// an import and takes only session transcripts.
func TestNativeTranscriptUpload(t *testing.T) {
	in := startServe(t)
	key := in.newUser("recorder", false)
	recs := claudeCodeSession("5e0b7a52-1c2d-4e3f-8a9b-0c1d2e3f4a5b", 3, nil)
	upload := func(body map[string]any) response {
		return in.do("POST", "/api/v1/me/transcripts", key, body)
	}
	r := upload(map[string]any{"data": sessionFile(recs[:len(recs)/2])})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.Equal(t, "claude_code", r.JSON(t)["format"])
	id := r.JSON(t)["trace_ids"].([]any)[0].(string)
	first := in.getTrace(t, key, id)

	r = upload(map[string]any{"data": sessionFile(recs), "format": "claude_code"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	grown := in.getTrace(t, key, id)
	require.Greater(t, len(grown.Steps), len(first.Steps))
	require.Equal(t, first.Steps[0]["id"], grown.Steps[0]["id"], "existing steps keep their ids")

	r = upload(map[string]any{"data": `{"steps":[{"role":"user","content":"x"}]}`})
	require.Equal(t, http.StatusUnprocessableEntity, r.Status)
	require.Contains(t, r.JSON(t)["detail"], "Claude Code and Codex")
	require.Equal(t, http.StatusUnauthorized, in.do("POST", "/api/v1/me/transcripts", "", map[string]any{"data": "x"}).Status)
}
