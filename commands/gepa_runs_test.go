package commands_test

import (
	"context"
	"encoding/json"
	"maps"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
)

// The API records a worker's result only when it is the contract's shape,
// names a valid skill and stayed within the run's budget.
func TestCheckGepaResult(t *testing.T) {
	skill := "---\nname: refund-policy\ndescription: Use for refunds.\n---\n\nCheck the order."
	good := map[string]any{"skill_name": "refund-policy", "skill_description": "Use for refunds.", "best_skill": skill, "best_score": 0.7,
		"seed_skill": skill, "seed_score": 0.3, "candidates": []map[string]any{{"skill": skill, "score": 0.3}}, "holdout": nil,
		"metric_calls": 40, "max_metric_calls": 40}
	raw := func(edit func(map[string]any)) json.RawMessage {
		m := map[string]any{}
		maps.Copy(m, good)
		if edit != nil {
			edit(m)
		}
		b, _ := json.Marshal(m)
		return b
	}
	_, err := commands.CheckGepaResult(raw(nil), 40)
	require.NoError(t, err)
	for name, edit := range map[string]func(map[string]any){
		"over budget":    func(m map[string]any) { m["metric_calls"] = 41 },
		"bad name":       func(m map[string]any) { m["skill_name"] = "Refund Policy" },
		"no description": func(m map[string]any) { m["skill_description"] = "" },
		"not a SKILL.md": func(m map[string]any) { m["best_skill"] = "Check the order." },
		"score range":    func(m map[string]any) { m["best_score"] = 1.5 },
		"no candidates":  func(m map[string]any) { m["candidates"] = []any{} },
		"bad holdout": func(m map[string]any) {
			m["holdout"] = map[string]any{"examples": 0, "seed_score": 0.1, "best_score": 0.2}
		},
	} {
		_, err := commands.CheckGepaResult(raw(edit), 40)
		var ve *domain.ValidationError
		require.ErrorAs(t, err, &ve, name)
	}
}

// A request with two unusable model strings is refused naming the first
// (task_model), every time: the check does not follow map order.
func TestGepaRequestNamesTheFirstBadModel(t *testing.T) {
	cmds, _, actor := setup(t)
	bad := "not a model"
	for range 20 {
		_, err := cmds.RequestGepaRun.Handle(context.Background(), commands.RequestGepaRun{Actor: actor,
			Input: commands.RequestGepa{ModelID: "m", TaskModel: &bad, ReflectionModel: &bad}})
		var ve *domain.ValidationError
		require.ErrorAs(t, err, &ve)
		require.Equal(t, "task_model", ve.Field)
	}
}
