package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// importAnswer is POST /traces/import's answer.
type importAnswer struct {
	Format             string   `json:"format"`
	Imported           int      `json:"imported"`
	TraceIDs           []string `json:"trace_ids"`
	Unchanged          int      `json:"unchanged"`
	AnnotationsRemoved int      `json:"annotations_removed"`
}

func (in *instance) importAnswer(t *testing.T, key, format string, data []byte) importAnswer {
	t.Helper()
	r := in.do("POST", "/api/v1/rm/traces/import", key, map[string]any{"format": format, "data": string(data)})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	var out importAnswer
	require.NoError(t, json.Unmarshal(r.Body, &out))
	return out
}

// reviewState is what a reviewer sees of a trace: its step ids in order and
// its annotations as "step id|rating|comment".
func (in *instance) reviewState(t *testing.T, key, id string) (steps, annotations []string) {
	d := in.getTrace(t, key, id)
	for _, s := range d.Steps {
		steps = append(steps, s["id"].(string))
	}
	for _, a := range d.Annotations {
		m := a.(map[string]any)
		b, _ := json.Marshal([]any{m["step_id"], m["rating"], m["comment"]})
		annotations = append(annotations, string(b))
	}
	sort.Strings(annotations)
	return steps, annotations
}

// reimportFixtures are the format fixtures of the project and the real
// public exports of ../shared/fixtures (when present).
func reimportFixtures(t *testing.T) []string {
	files, err := filepath.Glob(filepath.Join("..", "domain", "formats", "testdata", "*"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	shared := os.Getenv("CRITIC_FIXTURES_DIR")
	if shared == "" {
		shared = filepath.Join("..", "..", "shared", "fixtures")
	}
	real, _ := filepath.Glob(filepath.Join(shared, "*", "*.json*"))
	if len(real) == 0 {
		testNote("e2e: TestReimportOfEveryFixtureKeepsItsReview ran without the real public exports (none in %s; set CRITIC_FIXTURES_DIR)", shared)
	}
	return append(files, real...)
}

// TestReimportOfEveryFixtureKeepsItsReview: rate and comment on the steps of
// every fixture (every format, the real exports too), import the same files
// again: each answer says unchanged, nothing was removed, and every step id
// and annotation is still there.
func TestReimportOfEveryFixtureKeepsItsReview(t *testing.T) {
	in := startServe(t, "CRITIC_MAX_BODY_BYTES=20000000")
	key := in.newUser("reviewer", false)
	for _, path := range reimportFixtures(t) {
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		name := filepath.Base(path)
		first := in.importAnswer(t, key, "auto", data)
		require.NotEmpty(t, first.TraceIDs, name)
		before := map[string][2][]string{}
		for _, id := range first.TraceIDs {
			d := in.getTrace(t, key, id)
			rated := len(d.Annotations) // a source's own reviews (Langfuse scores)
			for _, s := range d.Steps {
				if s["role"] == "system" || thinkingStep(s) || rated == len(d.Annotations)+2 {
					continue
				}
				r := in.do("POST", "/api/v1/rm/traces/"+id+"/annotations", key,
					map[string]any{"step_id": s["id"], "rating": 1, "comment": "kept from " + name})
				require.Equal(t, http.StatusOK, r.Status, string(r.Body))
				rated++
			}
			require.Equal(t, http.StatusOK, in.do("POST", "/api/v1/rm/traces/"+id+"/annotations", key, map[string]any{"rating": -1}).Status)
			steps, anns := in.reviewState(t, key, id)
			require.Len(t, anns, rated+1, name)
			before[id] = [2][]string{steps, anns}
		}

		again := in.importAnswer(t, key, "auto", data)
		require.Equal(t, first.TraceIDs, again.TraceIDs, "%s: the same traces", name)
		require.Equal(t, len(again.TraceIDs), again.Unchanged, "%s: the same file again is unchanged", name)
		require.Zero(t, again.AnnotationsRemoved, name)
		for _, id := range first.TraceIDs {
			steps, anns := in.reviewState(t, key, id)
			require.Equal(t, before[id][0], steps, "%s: step ids kept", name)
			require.Equal(t, before[id][1], anns, "%s: annotations kept", name)
		}
	}
}

// TestReimportRemovesOnlyTheChangedStepsAnnotations: a revision that
// changes one step keeps every other step's id and annotations, removes the
// changed step's, and says how many it removed (the API and the CLI).
func TestReimportRemovesOnlyTheChangedStepsAnnotations(t *testing.T) {
	in := startServe(t)
	key := in.newUser("reviewer", false)
	c := newClientEnv(t)
	out, code := c.run(key+"\n", "login", "--url", in.url)
	require.Equal(t, 0, code, out)

	file := c.write("refund.jsonl", refundTrace+"\n")
	out, code = c.run("", "import", file)
	require.Equal(t, 0, code, out)
	d, ok := in.traceByExternalID(t, key, "refund-1182")
	require.True(t, ok)
	id := d.ID
	for _, i := range []int{1, 2, 4} {
		r := in.do("POST", "/api/v1/rm/traces/"+id+"/annotations", key, map[string]any{"step_id": d.Steps[i]["id"], "rating": 1, "comment": "step " + d.Steps[i]["role"].(string)})
		require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	}
	require.Equal(t, http.StatusOK, in.do("POST", "/api/v1/rm/traces/"+id+"/annotations", key, map[string]any{"comment": "whole trace"}).Status)
	steps, anns := in.reviewState(t, key, id)
	require.Len(t, anns, 4)

	out, code = c.run("", "import", file)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "unchanged  "+file+": 1 traces (stash)")
	require.Contains(t, out, "imported 0 file(s) (0 traces), unchanged 1, failed 0")
	s2, a2 := in.reviewState(t, key, id)
	require.Equal(t, steps, s2)
	require.Equal(t, anns, a2)

	// The last answer changes: only its annotation goes.
	changed := strings.Replace(refundTrace, "delivered on...", "delivered on Monday.", 1)
	c.write("refund.jsonl", changed+"\n")
	out, code = c.run("", "import", file)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "1 annotation(s) removed with changed steps")
	s3, a3 := in.reviewState(t, key, id)
	require.Equal(t, steps[:4], s3[:4], "unchanged steps keep their ids")
	require.NotEqual(t, steps[4], s3[4], "the changed step is a new step")
	require.Len(t, a3, 3)
	for _, a := range a3 {
		require.NotContains(t, a, steps[4])
	}
	require.Equal(t, "Your order was delivered on Monday.", in.getTrace(t, key, id).Steps[4]["content"])

	// Through the API: a changed tool input removes that step's annotation
	// and the answer counts it.
	r := in.do("POST", "/api/v1/rm/traces/"+id+"/annotations", key, map[string]any{"step_id": s3[4], "rating": -1})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	ans := in.importAnswer(t, key, "stash", []byte(strings.Replace(changed, `"order_id":"1182"`, `"order_id":"1183"`, 1)))
	require.Equal(t, 0, ans.Unchanged)
	require.Equal(t, 1, ans.AnnotationsRemoved, "only the tool call's annotation")
	s4, a4 := in.reviewState(t, key, id)
	require.Equal(t, s3[:2], s4[:2])
	require.NotEqual(t, s3[2], s4[2])
	require.Equal(t, s3[3:], s4[3:], "the steps after it are unchanged in content and place")
	require.Len(t, a4, 3)
}

// TestLangfuseScoresBecomeAnnotations: a Langfuse export's scores are kept
// as annotations that say the score, its value, its source and evaluator,
// authored by the import; importing the export again adds none twice.
func TestLangfuseScoresBecomeAnnotations(t *testing.T) {
	in := startServe(t)
	key := in.newUser("migrator", false)
	raw, err := os.ReadFile(filepath.Join("..", "domain", "formats", "testdata", "langfuse_public.json"))
	require.NoError(t, err)
	var exports []map[string]any
	require.NoError(t, json.Unmarshal(raw, &exports))
	exports[0]["scores"] = []any{
		map[string]any{"id": "sc-1", "name": "toxicity", "value": 0.8, "dataType": "NUMERIC", "source": "EVAL", "configId": "cfg-7", "comment": "dismissive"},
		map[string]any{"id": "sc-2", "name": "resolved", "value": 0, "dataType": "BOOLEAN", "source": "ANNOTATION", "authorUserId": "u-42"},
	}
	data, err := json.Marshal(exports)
	require.NoError(t, err)
	first := in.importAnswer(t, key, "langfuse", data)
	d := in.getTrace(t, key, first.TraceIDs[0])
	require.Len(t, d.Annotations, 2)
	byComment := map[string]map[string]any{}
	for _, a := range d.Annotations {
		m := a.(map[string]any)
		require.Equal(t, "import:langfuse", m["author_name"])
		require.Nil(t, m["step_id"])
		byComment[m["comment"].(string)] = m
	}
	num := byComment["Langfuse score toxicity = 0.8 (EVAL, evaluator cfg-7): dismissive"]
	require.NotNil(t, num, "%v", byComment)
	require.Nil(t, num["rating"], "a numeric score's polarity is unknown: no rating")
	boolean := byComment["Langfuse score resolved = 0 (ANNOTATION, author u-42)"]
	require.NotNil(t, boolean, "%v", byComment)
	require.Equal(t, float64(-1), boolean["rating"])

	again := in.importAnswer(t, key, "langfuse", data)
	require.Equal(t, len(again.TraceIDs), again.Unchanged)
	require.Len(t, in.getTrace(t, key, first.TraceIDs[0]).Annotations, 2, "no score imported twice")

	// A reviewer deletes an imported score; the next import does not bring it back.
	require.Equal(t, http.StatusNoContent, in.do("DELETE", "/api/v1/rm/annotations/"+num["id"].(string), key, nil).Status)
	in.importAnswer(t, key, "langfuse", data)
	require.Len(t, in.getTrace(t, key, first.TraceIDs[0]).Annotations, 1)
}

// thinkingStep reports whether a step of GET /traces/{id} is the model's
// reasoning (metadata.thinking), which takes comments but not ratings.
func thinkingStep(s map[string]any) bool {
	m, _ := s["metadata"].(map[string]any)
	t, _ := m["thinking"].(bool)
	return t
}
