package labels

import (
	"maps"
	"slices"
)

// SchemaVersion names the label schema; a labeler records it with every
// label it writes, so a changed vocabulary is a new version, never a silent
// reinterpretation of old labels.
const SchemaVersion = "step_label_v1"

// userFields and agentFields are the enumerated fields of each actor's label,
// in schema order.
var (
	userFields  = []string{"intent", "verdict", "sentiment"}
	agentFields = []string{"type", "effect", "result", "outcome", "stance", "coverage"}
)

// Schema returns the JSON schema (draft 2020-12) of one actor's label, in the
// strict form structured-output providers accept: every property required,
// no others allowed, "none" references as null. The labeler knows each
// chunk's actor before it asks, so it asks with that actor's schema.
func Schema(a Actor) map[string]any {
	props := map[string]any{
		"chunk_id": map[string]any{"type": "string", "minLength": 1, "maxLength": MaxID},
		"task_id":  map[string]any{"type": "string", "minLength": 1, "maxLength": MaxID, "description": "the task (request) this chunk belongs to; chunks of one task share it"},
		"actor":    map[string]any{"type": "string", "const": string(a)},
		"evidence": map[string]any{"type": "string", "maxLength": MaxEvidence, "description": "a short quote from the chunk that supports the label"},
		"note":     map[string]any{"type": "string", "maxLength": MaxNote},
	}
	fields := userFields
	if a == ActorAgent {
		fields = agentFields
		props["duplicate_of"] = map[string]any{"type": []any{"string", "null"}, "minLength": 1, "description": "chunk_id of the earlier tool call this one repeats, or null"}
		props["is_output"] = map[string]any{"type": "boolean", "description": "whether the chunk hands the user an answer or deliverable"}
	} else {
		props["verdict_target"] = map[string]any{"type": []any{"string", "null"}, "minLength": 1, "description": "chunk_id of the agent answer the verdict is about, or null"}
	}
	for _, name := range fields {
		f := field(name)
		props[name] = map[string]any{"type": "string", "enum": toAny(names(name)), "description": f.Doc}
	}
	required := slices.Sorted(maps.Keys(props))
	return map[string]any{
		"$schema":              "https://json-schema.org/draft/2020-12/schema",
		"$id":                  "https://critic.dev/schemas/" + SchemaVersion + "/" + string(a) + ".json",
		"title":                "step label (" + string(a) + ")",
		"type":                 "object",
		"properties":           props,
		"required":             toAny(required),
		"additionalProperties": false,
	}
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
