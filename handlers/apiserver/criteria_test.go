package apiserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/platform/eventstore"
	"github.com/criticml/critic/projections/readmodel"
)

type criterionJSON struct {
	CriterionID string `json:"criterion_id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Kind        string `json:"kind"`
	Labels      []struct {
		Name  string `json:"name"`
		Score int    `json:"score"`
	} `json:"labels"`
	ScaleMax  *int   `json:"scale_max"`
	AppliesTo string `json:"applies_to"`
	Archived  bool   `json:"archived"`
	CreatedAt string `json:"created_at"`
}

type valueJSON struct {
	ID          string          `json:"id"`
	StepID      *string         `json:"step_id"`
	Rating      *int            `json:"rating"`
	Comment     *string         `json:"comment"`
	CriterionID *string         `json:"criterion_id"`
	Value       json.RawMessage `json:"value"`
	AuthorName  string          `json:"author_name"`
}

// criteriaTrace has one target of each kind: the trace, an assistant reply
// (step 1), a tool call (step 2), a tool result (step 3) and a thinking
// step (step 4) before the last reply (step 5).
const criteriaTrace = `{"id":"criteria-1","steps":[{"role":"user","content":"Where is order 5521?"},` +
	`{"role":"assistant","content":"Let me look it up."},` +
	`{"role":"assistant","content":"","tool_name":"lookup_order","tool_call_id":"c1","tool_input":{"order_id":"5521"}},` +
	`{"role":"tool","content":"shipped","tool_name":"lookup_order","tool_call_id":"c1"},` +
	`{"role":"assistant","content":"The user wants the status.","metadata":{"thinking":true}},` +
	`{"role":"assistant","content":"Order 5521 has shipped."}]}`

func (e *opsEnv) defineCriterion(t *testing.T, body map[string]any) criterionJSON {
	t.Helper()
	r := e.do(t, "POST", "/api/v1/rm/criteria", body)
	require.Equal(t, http.StatusCreated, r.status, string(r.body))
	requireSchema(t, "Criterion", r.body)
	var c criterionJSON
	require.NoError(t, json.Unmarshal(r.body, &c))
	return c
}

func (e *opsEnv) criteriaTraceID(t *testing.T) string {
	t.Helper()
	r := e.do(t, "POST", "/api/v1/rm/traces/import", map[string]any{"format": "stash", "data": criteriaTrace})
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	var imported struct {
		TraceIDs []string `json:"trace_ids"`
	}
	require.NoError(t, json.Unmarshal(r.body, &imported))
	return imported.TraceIDs[0]
}

func (e *opsEnv) traceAnnotations(t *testing.T, traceID string) []valueJSON {
	t.Helper()
	r := e.do(t, "GET", "/api/v1/rm/traces/"+traceID, nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	var d struct {
		Annotations []valueJSON `json:"annotations"`
	}
	require.NoError(t, json.Unmarshal(r.body, &d))
	return d.Annotations
}

func requireField(t *testing.T, r reply, status int, field string) {
	t.Helper()
	require.Equal(t, status, r.status, string(r.body))
	var body struct {
		Field string `json:"field"`
	}
	require.NoError(t, json.Unmarshal(r.body, &body))
	require.Equal(t, field, body.Field, string(r.body))
}

// TestCriteriaDefinitions: each kind of criterion is defined over REST and
// read back as defined; bad definitions are 422s naming the field; a
// duplicate name is 409; labels are renamed and appended but never
// removed; an archived criterion leaves GET /criteria unless asked for.
func TestCriteriaDefinitions(t *testing.T) {
	e := startOps(t, nil)
	binary := e.defineCriterion(t, map[string]any{"name": "Correct", "description": "Is the answer right?", "kind": "binary", "applies_to": "trace"})
	require.Equal(t, "binary", binary.Kind)
	require.Empty(t, binary.Labels)
	require.Nil(t, binary.ScaleMax)
	cat := e.defineCriterion(t, map[string]any{"name": "Tone", "kind": "categorical", "applies_to": "assistant",
		"labels": []map[string]any{{"name": "good", "score": 1}, {"name": "meh"}, {"name": "rude", "score": -1}}})
	require.Len(t, cat.Labels, 3)
	require.Equal(t, "meh", cat.Labels[1].Name)
	require.Equal(t, 0, cat.Labels[1].Score)
	require.Equal(t, -1, cat.Labels[2].Score)
	scale := e.defineCriterion(t, map[string]any{"name": "Tool choice", "kind": "scale", "scale_max": 5, "applies_to": "tool_call"})
	require.Equal(t, 5, *scale.ScaleMax)

	list := func(query string) []criterionJSON {
		t.Helper()
		r := e.do(t, "GET", "/api/v1/rm/criteria"+query, nil)
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		requireSchema(t, "CriterionList", r.body)
		var l struct {
			Criteria []criterionJSON `json:"criteria"`
		}
		require.NoError(t, json.Unmarshal(r.body, &l))
		return l.Criteria
	}
	got := list("")
	require.Len(t, got, 3)
	require.Equal(t, []string{"Correct", "Tone", "Tool choice"}, []string{got[0].Name, got[1].Name, got[2].Name}, "creation order")
	require.Equal(t, binary, got[0])
	require.Equal(t, "Is the answer right?", got[0].Description)

	for _, c := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"kind": "binary", "applies_to": "trace"}, "name"},
		{map[string]any{"name": strings.Repeat("x", 81), "kind": "binary", "applies_to": "trace"}, "name"},
		{map[string]any{"name": "  ", "kind": "binary", "applies_to": "trace"}, "name"},
		{map[string]any{"name": "K", "kind": "ternary", "applies_to": "trace"}, "kind"},
		{map[string]any{"name": "K", "kind": "binary", "applies_to": "user"}, "applies_to"},
		{map[string]any{"name": "K", "kind": "binary"}, "applies_to"},
		{map[string]any{"name": "K", "kind": "binary", "applies_to": "trace", "scale_max": 3}, "scale_max"},
		{map[string]any{"name": "K", "kind": "binary", "applies_to": "trace", "labels": []map[string]any{{"name": "a"}, {"name": "b"}}}, "labels"},
		{map[string]any{"name": "K", "kind": "categorical", "applies_to": "trace", "labels": []map[string]any{{"name": "only"}}}, "labels"},
		{map[string]any{"name": "K", "kind": "categorical", "applies_to": "trace"}, "labels"},
		{map[string]any{"name": "K", "kind": "categorical", "applies_to": "trace", "labels": []map[string]any{{"name": "a"}, {"name": "A"}}}, "labels[1].name"},
		{map[string]any{"name": "K", "kind": "categorical", "applies_to": "trace", "labels": []map[string]any{{"name": "a"}, {"name": strings.Repeat("b", 41)}}}, "labels[1].name"},
		{map[string]any{"name": "K", "kind": "categorical", "applies_to": "trace", "labels": []map[string]any{{"name": "a", "score": 2}, {"name": "b"}}}, "labels[0].score"},
		{map[string]any{"name": "K", "kind": "categorical", "applies_to": "trace", "labels": []map[string]any{{"score": 1}, {"name": "b"}}}, "labels[0].name"},
		{map[string]any{"name": "K", "kind": "scale", "applies_to": "trace"}, "scale_max"},
		{map[string]any{"name": "K", "kind": "scale", "applies_to": "trace", "scale_max": 11}, "scale_max"},
		{map[string]any{"name": "K", "kind": "scale", "applies_to": "trace", "scale_max": 1}, "scale_max"},
		{map[string]any{"name": "K", "kind": "binary", "applies_to": "trace", "colour": "red"}, "colour"},
	} {
		requireField(t, e.do(t, "POST", "/api/v1/rm/criteria", c.body), http.StatusUnprocessableEntity, c.field)
	}
	r := e.do(t, "POST", "/api/v1/rm/criteria", map[string]any{"name": "correct", "kind": "scale", "scale_max": 3, "applies_to": "trace"})
	require.Equal(t, http.StatusConflict, r.status, string(r.body))
	require.Contains(t, string(r.body), "Correct")
	require.Len(t, list(""), 3, "nothing half-written")

	// PATCH: rename, re-score and append labels; never remove them.
	r = e.do(t, "PATCH", "/api/v1/rm/criteria/"+cat.CriterionID, map[string]any{"name": "Tone of voice",
		"labels": []map[string]any{{"name": "polite", "score": 1}, {"name": "meh"}, {"name": "rude", "score": -1}, {"name": "curt", "score": -1}}})
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	requireSchema(t, "Criterion", r.body)
	var changed criterionJSON
	require.NoError(t, json.Unmarshal(r.body, &changed))
	require.Equal(t, "Tone of voice", changed.Name)
	require.Equal(t, []string{"polite", "meh", "rude", "curt"}, []string{changed.Labels[0].Name, changed.Labels[1].Name, changed.Labels[2].Name, changed.Labels[3].Name})
	requireField(t, e.do(t, "PATCH", "/api/v1/rm/criteria/"+cat.CriterionID, map[string]any{"labels": []map[string]any{{"name": "polite"}, {"name": "meh"}}}),
		http.StatusUnprocessableEntity, "labels")
	requireField(t, e.do(t, "PATCH", "/api/v1/rm/criteria/"+cat.CriterionID, map[string]any{"labels": []map[string]any{{"name": "meh2"}, {"name": "meh"}, {"name": "rude"}, {"name": "good"}}}),
		http.StatusUnprocessableEntity, "labels[3].name") // "good" was label 0's name
	requireField(t, e.do(t, "PATCH", "/api/v1/rm/criteria/"+binary.CriterionID, map[string]any{"labels": []map[string]any{{"name": "a"}, {"name": "b"}}}),
		http.StatusUnprocessableEntity, "labels")
	requireField(t, e.do(t, "PATCH", "/api/v1/rm/criteria/"+binary.CriterionID, map[string]any{"kind": "scale"}), http.StatusUnprocessableEntity, "kind")
	r = e.do(t, "PATCH", "/api/v1/rm/criteria/"+binary.CriterionID, map[string]any{"name": "Tool Choice"})
	require.Equal(t, http.StatusConflict, r.status, string(r.body))
	r = e.do(t, "PATCH", "/api/v1/rm/criteria/00000000-0000-0000-0000-000000000000", map[string]any{"name": "x"})
	require.Equal(t, http.StatusNotFound, r.status, string(r.body))

	// Archive: gone from the list, kept with include_archived; its name is free again.
	r = e.do(t, "DELETE", "/api/v1/rm/criteria/"+binary.CriterionID, nil)
	require.Equal(t, http.StatusNoContent, r.status, string(r.body))
	require.Len(t, list(""), 2)
	all := list("?include_archived=true")
	require.Len(t, all, 3)
	require.True(t, all[0].Archived)
	e.defineCriterion(t, map[string]any{"name": "Correct", "kind": "binary", "applies_to": "trace"})
	requireField(t, e.do(t, "GET", "/api/v1/rm/criteria?include_archived=yes", nil), http.StatusUnprocessableEntity, "include_archived")

	// Another account sees none of them.
	other, err := e.srv.Cmds.CreateUser.Handle(context.Background(), commands.CreateUser{Name: "other"})
	require.NoError(t, err)
	require.NoError(t, e.srv.Waiter.Wait(context.Background(), other.LastEventID))
	own := e.key
	e.key = other.APIKey
	require.Empty(t, list("?include_archived=true"))
	r = e.do(t, "DELETE", "/api/v1/rm/criteria/"+cat.CriterionID, nil)
	require.Equal(t, http.StatusNotFound, r.status, string(r.body))
	e.key = own
}

// TestCriterionValues: values are annotations on the target their
// criterion applies to, one live value per reviewer per criterion per
// target; they show in the trace JSON and the annotations export; an
// archived criterion keeps them and takes no new ones; a label rename
// renames them; replay rebuilds the same read model.
func TestCriterionValues(t *testing.T) {
	e := startOps(t, nil)
	ctx := context.Background()
	traceID := e.criteriaTraceID(t)
	replyStep, call, result, thinking := e.stepID(t, traceID, 1), e.stepID(t, traceID, 2), e.stepID(t, traceID, 3), e.stepID(t, traceID, 4)
	correct := e.defineCriterion(t, map[string]any{"name": "Correct", "kind": "binary", "applies_to": "trace"})
	tone := e.defineCriterion(t, map[string]any{"name": "Tone", "kind": "categorical", "applies_to": "assistant",
		"labels": []map[string]any{{"name": "good", "score": 1}, {"name": "rude", "score": -1}}})
	tool := e.defineCriterion(t, map[string]any{"name": "Tool choice", "kind": "scale", "scale_max": 5, "applies_to": "tool_call"})

	post := func(body map[string]any) reply {
		t.Helper()
		return e.do(t, "POST", "/api/v1/rm/traces/"+traceID+"/annotations", body)
	}
	add := func(body map[string]any) valueJSON {
		t.Helper()
		r := post(body)
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		requireSchema(t, "Annotation", r.body)
		var a valueJSON
		require.NoError(t, json.Unmarshal(r.body, &a))
		return a
	}
	a1 := add(map[string]any{"criterion_id": correct.CriterionID, "value": "yes"})
	require.Equal(t, correct.CriterionID, *a1.CriterionID)
	require.JSONEq(t, `"yes"`, string(a1.Value))
	require.Nil(t, a1.Rating)
	require.Nil(t, a1.Comment)
	require.Nil(t, a1.StepID)
	a2 := add(map[string]any{"criterion_id": tone.CriterionID, "step_id": replyStep, "value": "good"})
	a3 := add(map[string]any{"criterion_id": tool.CriterionID, "step_id": call, "value": 4})
	require.JSONEq(t, `4`, string(a3.Value))

	// Wrong targets, wrong values, mixed requests: 422 naming the field, nothing stored.
	for _, c := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"criterion_id": correct.CriterionID, "step_id": replyStep, "value": "yes"}, "step_id"},
		{map[string]any{"criterion_id": tone.CriterionID, "value": "good"}, "step_id"},
		{map[string]any{"criterion_id": tone.CriterionID, "step_id": call, "value": "good"}, "step_id"},
		{map[string]any{"criterion_id": tone.CriterionID, "step_id": thinking, "value": "good"}, "step_id"},
		{map[string]any{"criterion_id": tool.CriterionID, "step_id": replyStep, "value": 3}, "step_id"},
		{map[string]any{"criterion_id": tool.CriterionID, "step_id": result, "value": 3}, "step_id"},
		{map[string]any{"criterion_id": correct.CriterionID, "value": "maybe"}, "value"},
		{map[string]any{"criterion_id": correct.CriterionID, "value": true}, "value"},
		{map[string]any{"criterion_id": correct.CriterionID}, "value"},
		{map[string]any{"criterion_id": tone.CriterionID, "step_id": replyStep, "value": "great"}, "value"},
		{map[string]any{"criterion_id": tool.CriterionID, "step_id": call, "value": 6}, "value"},
		{map[string]any{"criterion_id": tool.CriterionID, "step_id": call, "value": 2.5}, "value"},
		{map[string]any{"criterion_id": tool.CriterionID, "step_id": call, "value": "4"}, "value"},
		{map[string]any{"criterion_id": correct.CriterionID, "value": "yes", "rating": 1}, "rating"},
		{map[string]any{"criterion_id": correct.CriterionID, "value": "yes", "comment": "and a note"}, "comment"},
		{map[string]any{"value": "yes"}, "criterion_id"},
		{map[string]any{"criterion_id": "00000000-0000-0000-0000-000000000000", "value": "yes"}, "criterion_id"},
	} {
		requireField(t, post(c.body), http.StatusUnprocessableEntity, c.field)
	}
	require.Len(t, e.traceAnnotations(t, traceID), 3)

	// A new value replaces the reviewer's earlier one; a rating on the same
	// target is another annotation and stays.
	rating := add(map[string]any{"step_id": replyStep, "rating": 1, "comment": "clear"})
	a2b := add(map[string]any{"criterion_id": tone.CriterionID, "step_id": replyStep, "value": "rude"})
	anns := e.traceAnnotations(t, traceID)
	ids := map[string]string{}
	for _, a := range anns {
		v := "rating"
		if a.CriterionID != nil {
			v = string(a.Value)
		}
		ids[a.ID] = v
	}
	require.Equal(t, map[string]string{a1.ID: `"yes"`, a3.ID: `4`, rating.ID: "rating", a2b.ID: `"rude"`}, ids, "one live Tone value: the second replaced the first")
	require.NotContains(t, ids, a2.ID)

	// PATCH changes a value (checked), never adds a rating to it.
	r := e.do(t, "PATCH", "/api/v1/rm/annotations/"+a3.ID, map[string]any{"value": 2})
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	requireSchema(t, "Annotation", r.body)
	require.Contains(t, string(r.body), `"value":2`)
	requireField(t, e.do(t, "PATCH", "/api/v1/rm/annotations/"+a3.ID, map[string]any{"value": 9}), http.StatusUnprocessableEntity, "value")
	requireField(t, e.do(t, "PATCH", "/api/v1/rm/annotations/"+a3.ID, map[string]any{"rating": 1}), http.StatusUnprocessableEntity, "rating")
	requireField(t, e.do(t, "PATCH", "/api/v1/rm/annotations/"+rating.ID, map[string]any{"value": "yes"}), http.StatusUnprocessableEntity, "value")

	// Renaming a label renames its stored values.
	r = e.do(t, "PATCH", "/api/v1/rm/criteria/"+tone.CriterionID, map[string]any{"labels": []map[string]any{{"name": "good", "score": 1}, {"name": "impolite", "score": -1}}})
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	for _, a := range e.traceAnnotations(t, traceID) {
		if a.ID == a2b.ID {
			require.JSONEq(t, `"impolite"`, string(a.Value))
		}
	}

	// Archive: the values stay (trace JSON and export); no new ones.
	r = e.do(t, "DELETE", "/api/v1/rm/criteria/"+correct.CriterionID, nil)
	require.Equal(t, http.StatusNoContent, r.status, string(r.body))
	requireField(t, post(map[string]any{"criterion_id": correct.CriterionID, "value": "no"}), http.StatusUnprocessableEntity, "criterion_id")
	requireField(t, e.do(t, "PATCH", "/api/v1/rm/annotations/"+a1.ID, map[string]any{"value": "no"}), http.StatusUnprocessableEntity, "value")
	var kept bool
	for _, a := range e.traceAnnotations(t, traceID) {
		kept = kept || (a.ID == a1.ID && string(a.Value) == `"yes"`)
	}
	require.True(t, kept, "an archived criterion's value stays in the trace JSON")

	r = e.do(t, "GET", "/api/v1/rm/export/annotations", nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	type exported struct {
		StepIndex   *int            `json:"step_index"`
		Rating      *int            `json:"rating"`
		CriterionID *string         `json:"criterion_id"`
		Value       json.RawMessage `json:"value"`
	}
	var lines []exported
	for l := range strings.SplitSeq(strings.TrimSpace(string(r.body)), "\n") {
		var x exported
		require.NoError(t, json.Unmarshal([]byte(l), &x))
		lines = append(lines, x)
	}
	require.Len(t, lines, 4)
	byCriterion := map[string]string{}
	for _, l := range lines {
		if l.CriterionID == nil {
			require.Equal(t, "null", string(l.Value))
			continue
		}
		byCriterion[*l.CriterionID] = string(l.Value)
	}
	require.Equal(t, map[string]string{correct.CriterionID: `"yes"`, tone.CriterionID: `"impolite"`, tool.CriterionID: `2`}, byCriterion)

	// SQL: the annotations' criterion_id and value (as text), and the criteria.
	status, q := e.query(t, `SELECT c.name, a.value, a.rating FROM annotations a JOIN criteria c USING (criterion_id) ORDER BY c.name`)
	require.Equal(t, http.StatusOK, status, q.Detail)
	require.Equal(t, [][]any{{"Correct", "yes", nil}, {"Tone", "impolite", nil}, {"Tool choice", "2", nil}}, q.Rows)
	status, q = e.query(t, `SELECT name, kind, applies_to, scale_max, labels::VARCHAR, archived FROM criteria ORDER BY created_at`)
	require.Equal(t, http.StatusOK, status, q.Detail)
	require.Equal(t, [][]any{
		{"Correct", "binary", "trace", nil, "[]", true},
		{"Tone", "categorical", "assistant", nil, `[{"name":"good","score":1},{"name":"impolite","score":-1}]`, false},
		{"Tool choice", "scale", "tool_call", float64(5), "[]", false},
	}, q.Rows)
	status, q = e.query(t, `SELECT count(*) FROM annotations WHERE criterion_id IS NULL AND value IS NULL AND rating = 1`)
	require.Equal(t, http.StatusOK, status, q.Detail)
	require.Equal(t, [][]any{{float64(1)}}, q.Rows, "a rating has no criterion and no value")

	// DELETE removes a value.
	r = e.do(t, "DELETE", "/api/v1/rm/annotations/"+a3.ID, nil)
	require.Equal(t, http.StatusNoContent, r.status, string(r.body))
	require.Len(t, e.traceAnnotations(t, traceID), 3)

	before := dumpTables(t, e, "rm_annotations", "rm_criteria", "rm_guidelines")
	_, err := readmodel.New(e.pool, e.blobs, nil).Replay(ctx, eventstore.New(e.pool, e.blobs))
	require.NoError(t, err)
	require.Equal(t, before, dumpTables(t, e, "rm_annotations", "rm_criteria", "rm_guidelines"))
}

// TestGuidelines: an account's guidelines round-trip; over 64 KiB is a 422
// and keeps the old ones; replay agrees.
func TestGuidelines(t *testing.T) {
	e := startOps(t, nil)
	r := e.do(t, "GET", "/api/v1/rm/guidelines", nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	requireSchema(t, "Guidelines", r.body)
	require.JSONEq(t, `{"markdown":"","updated_at":null}`, string(r.body))

	md := "# Review guidelines\n\n- A tool call that guesses an id is **bad**.\n- `__pycache__/` is not a source file.\n"
	r = e.do(t, "PUT", "/api/v1/rm/guidelines", map[string]any{"markdown": md})
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	requireSchema(t, "Guidelines", r.body)
	var g struct {
		Markdown  string  `json:"markdown"`
		UpdatedAt *string `json:"updated_at"`
	}
	require.NoError(t, json.Unmarshal(r.body, &g))
	require.Equal(t, md, g.Markdown)
	require.NotNil(t, g.UpdatedAt)

	requireField(t, e.do(t, "PUT", "/api/v1/rm/guidelines", map[string]any{"markdown": strings.Repeat("x", 64<<10+1)}), http.StatusUnprocessableEntity, "markdown")
	requireField(t, e.do(t, "PUT", "/api/v1/rm/guidelines", map[string]any{}), http.StatusUnprocessableEntity, "markdown")
	r = e.do(t, "GET", "/api/v1/rm/guidelines", nil)
	require.NoError(t, json.Unmarshal(r.body, &g))
	require.Equal(t, md, g.Markdown, "a refused update keeps the guidelines")

	before := dumpTables(t, e, "rm_guidelines")
	_, err := readmodel.New(e.pool, e.blobs, nil).Replay(context.Background(), eventstore.New(e.pool, e.blobs))
	require.NoError(t, err)
	require.Equal(t, before, dumpTables(t, e, "rm_guidelines"))
}

// TestTrainingOnACriterion: POST /reward-models with
// training_config.criterion stores it, the model shows the criterion's id
// and name, and its dataset's pairs follow the criterion's values, not the
// (contrary) ratings on the same traces; an unknown criterion, or another
// annotation source with it, is a 422 naming the field.
func TestTrainingOnACriterion(t *testing.T) {
	e := startOps(t, nil)
	ctx := context.Background()
	r := e.importTraces(t, "crit-a", "crit-b", "crit-c")
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	var imported struct {
		TraceIDs []string `json:"trace_ids"`
	}
	require.NoError(t, json.Unmarshal(r.body, &imported))
	ids := imported.TraceIDs
	correct := e.defineCriterion(t, map[string]any{"name": "Correct", "kind": "binary", "applies_to": "trace"})
	for i, v := range []string{"yes", "no", "no"} {
		r := e.do(t, "POST", "/api/v1/rm/traces/"+ids[i]+"/annotations", map[string]any{"criterion_id": correct.CriterionID, "value": v})
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		rating := map[string]int{"yes": -1, "no": 1}[v] // the ratings say the opposite
		r = e.do(t, "POST", "/api/v1/rm/traces/"+ids[i]+"/annotations", map[string]any{"rating": rating})
		require.Equal(t, http.StatusOK, r.status, string(r.body))
	}

	requireField(t, e.do(t, "POST", "/api/v1/rm/reward-models", map[string]any{"name": "m", "trace_ids": ids,
		"training_config": map[string]any{"criterion": "00000000-0000-0000-0000-000000000000"}}), http.StatusUnprocessableEntity, "training_config.criterion")
	requireField(t, e.do(t, "POST", "/api/v1/rm/reward-models", map[string]any{"name": "m", "trace_ids": ids,
		"training_config": map[string]any{"criterion": correct.CriterionID, "annotation_source": "feedback"}}), http.StatusUnprocessableEntity, "training_config.annotation_source")
	requireField(t, e.do(t, "POST", "/api/v1/rm/reward-models", map[string]any{"name": "m", "trace_ids": ids,
		"training_config": map[string]any{"criterion": 7}}), http.StatusUnprocessableEntity, "training_config.criterion")

	r = e.do(t, "POST", "/api/v1/rm/reward-models", map[string]any{"name": "on correctness", "trace_ids": ids,
		"training_config": map[string]any{"criterion": correct.CriterionID}})
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	var m struct {
		ID             string `json:"id"`
		TrainingConfig struct {
			AnnotationSource string  `json:"annotation_source"`
			Criterion        *string `json:"criterion"`
			CriterionName    *string `json:"criterion_name"`
		} `json:"training_config"`
	}
	require.NoError(t, json.Unmarshal(r.body, &m))
	r = e.do(t, "GET", "/api/v1/rm/reward-models/"+m.ID, nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	requireSchema(t, "RewardModelDetail", r.body)
	require.NoError(t, json.Unmarshal(r.body, &m))
	require.Equal(t, correct.CriterionID, *m.TrainingConfig.Criterion)
	require.Equal(t, "Correct", *m.TrainingConfig.CriterionName)
	require.Equal(t, "explicit", m.TrainingConfig.AnnotationSource)
	r = e.do(t, "GET", "/api/v1/rm/reward-models", nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.Contains(t, string(r.body), `"criterion_name":"Correct"`)

	// A model on ratings shows no criterion.
	r = e.do(t, "POST", "/api/v1/rm/reward-models", map[string]any{"name": "on ratings", "trace_ids": ids})
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.Contains(t, string(r.body), `"criterion":null,"criterion_name":null`)

	_, err := e.srv.Cmds.BuildDataset.Handle(ctx, commands.BuildDataset{ModelID: m.ID})
	require.NoError(t, err)
	model, err := e.srv.Cmds.Streams.Model(ctx, m.ID)
	require.NoError(t, err)
	require.NotNil(t, model.Dataset, "the dataset was built (%s)", model.Error)
	in, err := e.srv.Cmds.Streams.DatasetInputs(ctx, model, model.Dataset.AsOfSeq)
	require.NoError(t, err)
	pairs, err := rewardmodels.BuildDatasetFrom(in)
	require.NoError(t, err)
	require.Len(t, pairs.Pairs, 2, "crit-a (yes) over crit-b and crit-c (no)")
	for _, p := range pairs.Pairs {
		require.Equal(t, ids[0], p.TraceIDs[0], "chosen by the criterion, though rated -1")
		require.Contains(t, p.Chosen, "Refund order crit-a")
	}
}
