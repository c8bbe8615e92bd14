package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestAnnotationsCountsExportsAndPairs(t *testing.T) {
	in := startServe(t)
	key := in.newUser("henry", false)
	other := in.newUser("mallory", false)
	ids := in.importTraces(key, "stash", refundTrace+"\n"+
		`{"id":"pw","steps":[{"role":"system","content":"Be safe."},{"role":"user","content":"What's my password?"},{"role":"assistant","content":"Sure! I've issued a full refund to your card."}]}`)
	good, bad := ids[0], ids[1]
	d := in.getTrace(t, key, bad)
	sysStep, answer := d.Steps[0]["id"].(string), d.Steps[2]["id"].(string)

	post := func(trace string, body any) response {
		return in.do("POST", "/api/v1/rm/traces/"+trace+"/annotations", key, body)
	}
	// A step rating with a quote anchored in the step's content.
	r := post(bad, map[string]any{"step_id": answer, "rating": -1, "comment": "Promised a refund without checking the policy",
		"quote": map[string]any{"text": "I've issued a full refund", "prefix": "Sure! ", "suffix": " to your card"}})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	ann := r.JSON(t)
	for _, k := range []string{"id", "trace_id", "step_id", "rating", "comment", "quote", "label_error", "label_error_note", "author_id", "author_name", "created_at"} {
		require.Contains(t, ann, k)
	}
	require.Equal(t, "henry", ann["author_name"])
	require.Equal(t, float64(-1), ann["rating"])
	badStepAnn := ann["id"].(string)

	require.Equal(t, http.StatusOK, post(good, map[string]any{"rating": 1}).Status)
	require.Equal(t, http.StatusOK, post(bad, map[string]any{"rating": -1, "comment": "wrong task"}).Status)
	require.Equal(t, http.StatusOK, post(bad, map[string]any{"step_id": sysStep, "comment": "system prompt is too thin"}).Status)

	t.Run("rules", func(t *testing.T) {
		before := in.eventCount()
		cases := []struct {
			body   map[string]any
			detail string
		}{
			{map[string]any{"rating": 2}, "rating must be 1, -1 or null"},
			{map[string]any{}, "needs a rating or a comment"},
			{map[string]any{"comment": "   "}, "needs a rating or a comment"},
			{map[string]any{"rating": 1, "quote": map[string]any{"text": "x"}}, "a quote needs a step_id"},
			{map[string]any{"step_id": answer, "comment": "c", "quote": map[string]any{"text": "not in the step"}}, "does not occur"},
			{map[string]any{"step_id": answer, "comment": "c", "quote": map[string]any{"text": "full refund", "prefix": "wrong "}}, "does not occur"},
			{map[string]any{"step_id": sysStep, "rating": 1}, "take comments but not ratings"},
			{map[string]any{"step_id": "00000000-0000-0000-0000-000000000000", "rating": 1}, "is not a step of this trace"},
			{map[string]any{"rating": 1, "author": "x"}, "unknown field author"},
		}
		for _, c := range cases {
			r := post(bad, c.body)
			require.Equal(t, http.StatusUnprocessableEntity, r.Status, "%v: %s", c.body, r.Body)
			require.Contains(t, r.JSON(t)["detail"], c.detail)
		}
		require.Equal(t, http.StatusNotFound, in.do("POST", "/api/v1/rm/traces/"+bad+"/annotations", other, map[string]any{"rating": 1}).Status)
		require.Equal(t, http.StatusNotFound, in.do("PATCH", "/api/v1/rm/annotations/"+badStepAnn, other, map[string]any{"rating": 1}).Status)
		require.Equal(t, http.StatusNotFound, in.do("DELETE", "/api/v1/rm/annotations/"+badStepAnn, other, nil).Status)
		require.Equal(t, before, in.eventCount())
	})

	// Counts on the list: label errors do not count as positive/negative.
	summary := func(id string) map[string]any {
		for _, s := range in.do("GET", "/api/v1/rm/traces", key, nil).JSON(t)["traces"].([]any) {
			if s.(map[string]any)["id"] == id {
				return s.(map[string]any)
			}
		}
		t.Fatalf("trace %s not listed", id)
		return nil
	}
	s := summary(bad)
	require.Equal(t, []float64{0, 2, 3, 0}, []float64{s["positive_count"].(float64), s["negative_count"].(float64), s["comment_count"].(float64), s["label_error_count"].(float64)})

	// PATCH: present fields change (null clears), absent ones stay.
	p := in.do("PATCH", "/api/v1/rm/annotations/"+badStepAnn, key, map[string]any{"label_error": true, "label_error_note": "the refund was allowed"})
	require.Equal(t, http.StatusOK, p.Status, string(p.Body))
	pj := p.JSON(t)
	require.Equal(t, true, pj["label_error"])
	require.Equal(t, float64(-1), pj["rating"])
	require.Equal(t, "Promised a refund without checking the policy", pj["comment"])
	s = summary(bad)
	require.Equal(t, []float64{0, 1, 3, 1}, []float64{s["positive_count"].(float64), s["negative_count"].(float64), s["comment_count"].(float64), s["label_error_count"].(float64)})
	require.Equal(t, http.StatusUnprocessableEntity, in.do("PATCH", "/api/v1/rm/annotations/"+badStepAnn, key, map[string]any{"rating": nil, "comment": nil}).Status)
	require.Equal(t, http.StatusUnprocessableEntity, in.do("PATCH", "/api/v1/rm/annotations/"+badStepAnn, key, map[string]any{"colour": "red"}).Status)

	// Export annotations: one JSON object per line in the spec's shape.
	ex := in.do("GET", "/api/v1/rm/export/annotations", key, nil)
	require.Equal(t, http.StatusOK, ex.Status)
	lines := strings.Split(strings.TrimSpace(string(ex.Body)), "\n")
	require.Len(t, lines, 4)
	var first map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &first))
	require.Equal(t, map[string]any{"text": "I've issued a full refund", "prefix": "Sure! ", "suffix": " to your card"}, first["quote"])
	require.Equal(t, float64(2), first["step_index"])
	require.Equal(t, "pw", first["trace_external_id"])
	require.Equal(t, true, first["label_error"])
	require.Equal(t, "henry", first["author"])
	for _, k := range []string{"trace_id", "trace_external_id", "step_index", "rating", "comment", "quote", "label_error", "author", "created_at"} {
		require.Contains(t, first, k)
	}

	// Pairs: the good trace (+1) is chosen over the bad one (−1); the step
	// rating is a label error now, so there is no step pair.
	pr := in.do("GET", "/api/v1/rm/export/pairs", key, nil)
	require.Equal(t, http.StatusOK, pr.Status)
	var pair map[string]any
	require.Equal(t, 1, strings.Count(string(pr.Body), "\n"), string(pr.Body))
	require.NoError(t, json.Unmarshal(pr.Body, &pair))
	require.Equal(t, "trace", pair["granularity"])
	require.Equal(t, []any{good, bad}, pair["trace_ids"])
	require.Equal(t, "user: I want a refund for order 1182\nassistant: [tool_call] lookup_order({\"n\":12345678901234567890,\"order_id\":\"1182\"})\ntool: {\"status\": \"delivered\"}\nassistant: Your order was delivered on...", pair["chosen"])
	require.Equal(t, "user: What's my password?\nassistant: Sure! I've issued a full refund to your card.", pair["rejected"])
	again := in.do("GET", "/api/v1/rm/export/pairs", key, nil)
	require.Equal(t, pr.Body, again.Body, "byte-for-byte the same")

	// Re-importing removes annotations on steps that no longer exist (by
	// events) and keeps trace-level ones.
	before := in.eventCount()
	in.importTraces(key, "stash", `{"id":"pw","steps":[{"role":"user","content":"What's my password?"},{"role":"assistant","content":"I can't see passwords; use the reset link."}]}`)
	removed := 0
	for _, p := range in.openedPayloads(t, "annotation.removed.v1") { // sealed in the log
		if p["reason"] == "step_removed" {
			removed++
		}
	}
	require.Equal(t, 2, removed)
	require.Equal(t, before+3, in.eventCount())
	d = in.getTrace(t, key, bad)
	require.Len(t, d.Annotations, 1)
	require.Nil(t, d.Annotations[0].(map[string]any)["step_id"])
	require.Equal(t, "wrong task", d.Annotations[0].(map[string]any)["comment"])

	// DELETE removes an annotation.
	id := d.Annotations[0].(map[string]any)["id"].(string)
	require.Equal(t, http.StatusNoContent, in.do("DELETE", "/api/v1/rm/annotations/"+id, key, nil).Status)
	require.Empty(t, in.getTrace(t, key, bad).Annotations)
	require.Equal(t, http.StatusNotFound, in.do("DELETE", "/api/v1/rm/annotations/"+id, key, nil).Status)
}

func TestTraceSourcesAndFilters(t *testing.T) {
	in := startServe(t)
	key := in.newUser("sam", false)
	in.importTraces(key, "stash", `{"metadata":{"agent":"support-bot"},"steps":[{"role":"user","content":"a"}]}`)
	r := in.do("POST", "/api/v1/rm/traces/import", key, map[string]any{"format": "stash", "source_id": "prod",
		"data": `{"metadata":{"source_id":"ignored"},"steps":[{"role":"user","content":"b"}]}` + "\n" + `{"steps":[{"role":"user","content":"c"}]}`})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	in.importTraces(key, "stash", `{"steps":[{"role":"user","content":"d"}]}`)

	names := func(q string) map[string]string {
		out := map[string]string{}
		for _, s := range in.do("GET", "/api/v1/rm/traces"+q, key, nil).JSON(t)["traces"].([]any) {
			m := s.(map[string]any)
			out[m["title"].(string)] = m["source_id"].(string) + "|" + m["source_name"].(string)
		}
		return out
	}
	require.Equal(t, map[string]string{"a": "support-bot|support-bot", "b": "prod|prod", "c": "prod|prod", "d": "stash|stash"}, names(""))

	require.Equal(t, http.StatusOK, in.do("PUT", "/api/v1/rm/trace-sources", key, map[string]any{"source_id": "prod", "name": "Production bot"}).Status)
	require.Equal(t, http.StatusUnprocessableEntity, in.do("PUT", "/api/v1/rm/trace-sources", key, map[string]any{"source_id": "prod", "name": ""}).Status)
	require.Equal(t, http.StatusUnprocessableEntity, in.do("PUT", "/api/v1/rm/trace-sources", key, map[string]any{"source_id": "prod", "name": strings.Repeat("n", 121)}).Status)
	require.Equal(t, map[string]string{"b": "prod|Production bot", "c": "prod|Production bot"}, names("?source_id=prod"))
	// Another owner's alias does not leak.
	other := in.newUser("ola", false)
	require.Equal(t, http.StatusOK, in.do("PUT", "/api/v1/rm/trace-sources", other, map[string]any{"source_id": "stash", "name": "Mine"}).Status)
	require.Equal(t, "stash|stash", names("")["d"])

	today := time.Now().UTC().Format("2006-01-02")
	require.Len(t, names("?from="+today+"&to="+today), 4, "the range is inclusive of today")
	require.Empty(t, names("?to=2000-01-01"))
	require.Equal(t, http.StatusUnprocessableEntity, in.do("GET", "/api/v1/rm/traces?from=yesterday", key, nil).Status)
	require.Equal(t, http.StatusUnprocessableEntity, in.do("GET", "/api/v1/rm/traces?limit=0", key, nil).Status)
}
