package e2e

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestThinkingStepsTakeCommentsNotRatings: through the built binary, a
// rating on a thinking step (an Anthropic thinking block, metadata.thinking)
// answers 422 naming the step and the field and stores nothing, by POST and
// by PATCH of a comment on it; a comment on it and a rating of the reply it
// precedes are stored.
func TestThinkingStepsTakeCommentsNotRatings(t *testing.T) {
	in := startServe(t)
	key := in.newUser("rita", false)
	ids := in.importTraces(key, "anthropic_messages", `{"messages":[{"role":"user","content":"Remove the build droppings"},`+
		`{"role":"assistant","content":[{"type":"thinking","thinking":"check .gitignore first","signature":"s"},{"type":"text","text":"Removed __pycache__/."}]}]}`)
	d := in.getTrace(t, key, ids[0])
	require.Len(t, d.Steps, 3)
	thinking, reply := d.Steps[1], d.Steps[2]
	require.Equal(t, map[string]any{"thinking": true}, thinking["metadata"])
	post := func(body map[string]any) response {
		return in.do("POST", "/api/v1/rm/traces/"+ids[0]+"/annotations", key, body)
	}

	before := in.eventCount()
	r := post(map[string]any{"step_id": thinking["id"], "rating": 1})
	require.Equal(t, http.StatusUnprocessableEntity, r.Status, "%s", r.Body)
	body := r.JSON(t)
	require.Equal(t, "rating", body["field"])
	require.Contains(t, body["detail"], "step 2 ("+thinking["id"].(string)+") is thinking")
	require.Equal(t, before, in.eventCount(), "nothing stored")

	r = post(map[string]any{"step_id": thinking["id"], "comment": "reasoned well"})
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	comment := r.JSON(t)["id"].(string)
	before = in.eventCount()
	r = in.do("PATCH", "/api/v1/rm/annotations/"+comment, key, map[string]any{"rating": -1})
	require.Equal(t, http.StatusUnprocessableEntity, r.Status, "%s", r.Body)
	require.Equal(t, before, in.eventCount(), "nothing stored")

	require.Equal(t, http.StatusOK, post(map[string]any{"step_id": reply["id"], "rating": 1}).Status)
}
