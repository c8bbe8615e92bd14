package rest

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/assessment"
	"github.com/criticml/critic/domain/stepscores"
	"github.com/criticml/critic/handlers/edge"
	"github.com/criticml/critic/handlers/usecase"
	"github.com/criticml/critic/projections/readmodel"
)

// shapes maps each OpenAPI component to the Go type whose JSON encoding the
// API writes for it. The Go types are the source of truth for the shapes
// (the handlers encode them); the document describes them for clients and
// the web app's generated types. TestOpenAPIMatchesGoTypes fails on drift:
// a field the Go type writes that the document does not describe, a
// documented property no Go field writes, or a property whose JSON type
// differs.
var shapes = map[string]any{
	"TraceSummary":         readmodel.TraceSummary{},
	"TraceDetail":          readmodel.TraceDetail{},
	"Annotation":           readmodel.Annotation{},
	"RewardModel":          readmodel.RewardModel{},
	"RewardModelDetail":    readmodel.RewardModelDetail{},
	"ScoringRun":           readmodel.ScoringRun{},
	"TraceScore":           readmodel.TraceScore{},
	"ActionScore":          readmodel.ActionScore{},
	"LatestScore":          readmodel.LatestScore{},
	"LLMUsage":             readmodel.LLMUsage{},
	"FeedbackEntry":        readmodel.FeedbackEntry{},
	"GepaRun":              readmodel.GepaRun{},
	"GepaCandidate":        readmodel.GepaCandidate{},
	"GepaHoldout":          readmodel.GepaHoldout{},
	"Criterion":            readmodel.Criterion{},
	"Guidelines":           readmodel.Guidelines{},
	"ModelTrainingConfig":  readmodel.ModelTrainingConfig{},
	"TraceEvaluator":       readmodel.TraceEvaluator{},
	"EvaluatorActionScore": readmodel.EvaluatorActionScore{},
	"Step":                 readmodel.Step{},
	"Span":                 domain.Span{},
	"StepScores":           assessment.StepScores{},
	"LabelingStatus":       assessment.LabelingStatus{},
	"StepReward":           stepscores.StepReward{},
	"TaskScore":            assessment.Task{},
	"SectionSummaries":     usecase.SectionSummaries{},
	"Completion":           usecase.Completion{},
	"ComparisonQueue":      usecase.ComparisonQueue{},
	"ComparisonQueueItem":  usecase.ComparisonQueueItem{},
	"Contribution":         usecase.Contribution{},
	"EvaluatorStatus":      usecase.EvaluatorStatus{},
	"EvaluatorBenchmark":   usecase.EvaluatorBenchmark{},
	"EvaluatorRelease":     usecase.EvaluatorRelease{},
	"ReviewItem":           usecase.ReviewItem{},
	"ReviewQueue":          usecase.ReviewQueue{},
	"Retention":            usecase.Retention{},
	// Responses and requests of this package.
	"TraceList":               listResponse{},
	"ImportRequest":           importRequest{},
	"ImportResponse":          importResponse{},
	"AddAnnotation":           addAnnotationRequest{},
	"SectionSummariesRequest": sectionSummariesRequest{},
	"ComparisonRequest":       comparisonRequest{},
	"ContributionRequest":     contributionRequest{},
	"CriterionCreate":         defineCriterionRequest{},
	"GuidelinesRequest":       setGuidelinesRequest{},
	"GepaRunRequest":          gepaBody{},
	"Me":                      meResponse{},
	"AcceptInvitationRequest": acceptInvitationRequest{},
	"AcceptedInvitation":      acceptInvitationResponse{},
	"QueryRequest":            queryRequest{},
	"RewardModelRequest":      requestTrainingBody{},
	"ScoreRequest":            scoreBody{},
	"Format":                  usecase.FormatInfo{},
	"CriterionPatch":          changeCriterionRequest{},
	"TraceSource":             renameSourceRequest{},
	"Member":                  readmodel.Member{},
	"MemberProgress":          readmodel.MemberProgress{},
	"MembersProgress":         usecase.MembersProgress{},
	"RetentionRequest":        setRetentionRequest{},
	"Error":                   edge.ErrorBody{},
}

func TestOpenAPIMatchesGoTypes(t *testing.T) {
	raw, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Components struct {
			Schemas map[string]map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var problems []string
	names := make([]string, 0, len(shapes))
	for n := range shapes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		schema, ok := doc.Components.Schemas[name]
		if !ok {
			problems = append(problems, name+": no such component")
			continue
		}
		problems = append(problems, compareShape(name, reflect.TypeOf(shapes[name]), schema, doc.Components.Schemas, map[string]bool{})...)
	}
	if len(problems) > 0 {
		t.Errorf("openapi.json and the Go types differ:\n%s", strings.Join(problems, "\n"))
	}
}

// jsonFields lists the JSON properties a struct type writes (embedded
// structs flattened as encoding/json does).
func jsonFields(t reflect.Type) map[string]shapeField {
	out := map[string]shapeField{}
	for f := range t.Fields() {
		f := f
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k, v := range jsonFields(ft) {
					if _, set := out[k]; !set {
						out[k] = v
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = shapeField{f.Type, strings.Contains(tag, ",string")}
	}
	return out
}

// shapeField is a struct field as encoding/json writes it: its type, or a JSON
// string when the tag says ",string".
type shapeField struct {
	t        reflect.Type
	asString bool
}

// properties gathers a schema's properties, through allOf and $ref.
func schemaProperties(schema map[string]any, all map[string]map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	if ref, ok := schema["$ref"].(string); ok {
		return schemaProperties(all[strings.TrimPrefix(ref, "#/components/schemas/")], all)
	}
	for _, part := range schemaList(schema["allOf"]) {
		if m, ok := part.(map[string]any); ok {
			maps.Copy(out, schemaProperties(m, all))
		}
	}
	if props, ok := schema["properties"].(map[string]any); ok {
		for k, v := range props {
			m, _ := v.(map[string]any)
			out[k] = m
		}
	}
	return out
}

func schemaList(v any) []any { l, _ := v.([]any); return l }

// compareShape compares a struct type with an object schema, property by
// property, and goes on into the properties that are objects or arrays of
// objects on both sides (a $ref or an inline schema), so nested shapes are
// checked too; seen stops at a (schema, type) pair already compared.
func compareShape(name string, t reflect.Type, schema map[string]any, all map[string]map[string]any, seen map[string]bool) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if ref, ok := schema["$ref"].(string); ok {
		name = strings.TrimPrefix(ref, "#/components/schemas/")
		schema = all[name]
	}
	key := name + " " + t.String()
	if seen[key] || t.Kind() != reflect.Struct || t == reflect.TypeFor[time.Time]() {
		return nil
	}
	seen[key] = true
	fields := jsonFields(t)
	props := schemaProperties(schema, all)
	var out []string
	for f, fl := range fields {
		ft := fl.t
		if fl.asString {
			ft = reflect.TypeFor[string]()
		}
		p, ok := props[f]
		if !ok {
			out = append(out, fmt.Sprintf("%s.%s: written by %s but not documented", name, f, t))
			continue
		}
		if msg := typeMismatch(ft, p, all); msg != "" {
			out = append(out, fmt.Sprintf("%s.%s: %s", name, f, msg))
			continue
		}
		elem, sub := ft, p
		for elem.Kind() == reflect.Pointer {
			elem = elem.Elem()
		}
		if elem.Kind() == reflect.Slice {
			elem = elem.Elem()
			sub, _ = p["items"].(map[string]any)
			for elem.Kind() == reflect.Pointer {
				elem = elem.Elem()
			}
		}
		if sub != nil && elem.Kind() == reflect.Struct && (sub["$ref"] != nil || sub["properties"] != nil || sub["allOf"] != nil) {
			out = append(out, compareShape(name+"."+f, elem, sub, all, seen)...)
		}
	}
	for p := range props {
		if _, ok := fields[p]; !ok {
			out = append(out, fmt.Sprintf("%s.%s: documented but %s has no such field", name, p, t))
		}
	}
	sort.Strings(out)
	return out
}

// schemaTypes is the JSON types a property schema allows ("" = any).
func schemaTypes(p map[string]any, all map[string]map[string]any) map[string]bool {
	if ref, ok := p["$ref"].(string); ok {
		return schemaTypes(all[strings.TrimPrefix(ref, "#/components/schemas/")], all)
	}
	out := map[string]bool{}
	switch v := p["type"].(type) {
	case string:
		out[v] = true
	case []any:
		for _, x := range v {
			if s, ok := x.(string); ok {
				out[s] = true
			}
		}
	}
	for _, key := range []string{"allOf", "oneOf", "anyOf"} {
		for _, part := range schemaList(p[key]) {
			if m, ok := part.(map[string]any); ok {
				for k := range schemaTypes(m, all) {
					out[k] = true
				}
			}
		}
	}
	if len(out) == 0 {
		if _, ok := p["properties"]; ok {
			out["object"] = true
		}
	}
	return out
}

func typeMismatch(t reflect.Type, p map[string]any, all map[string]map[string]any) string {
	allowed := schemaTypes(p, all)
	if len(allowed) == 0 {
		return "" // any value
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var want string
	switch {
	case t == reflect.TypeFor[json.RawMessage]() || t.Kind() == reflect.Interface:
		return ""
	case t == reflect.TypeFor[time.Time]():
		want = "string"
	case t.Kind() == reflect.String:
		want = "string"
	case t.Kind() == reflect.Bool:
		want = "boolean"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		want = "integer"
		if !allowed["integer"] && allowed["number"] {
			want = "number"
		}
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		want = "number"
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
		want = "array"
	case t.Kind() == reflect.Map || t.Kind() == reflect.Struct:
		want = "object"
	default:
		return ""
	}
	if !allowed[want] {
		keys := make([]string, 0, len(allowed))
		for k := range allowed {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return fmt.Sprintf("Go writes %s (%s), the document says %s", want, t, strings.Join(keys, "|"))
	}
	return ""
}

// TestOpenAPIShapeCheckCatchesDrift: the check itself fails on each kind of
// drift, nested ones included.
func TestOpenAPIShapeCheckCatchesDrift(t *testing.T) {
	type inner struct {
		N int `json:"n"`
	}
	type outer struct {
		A     string  `json:"a"`
		T     int64   `json:"t,string"`
		Extra bool    `json:"extra"`
		Items []inner `json:"items"`
	}
	all := map[string]map[string]any{"Inner": {"type": "object", "properties": map[string]any{"n": map[string]any{"type": "string"}}}}
	schema := map[string]any{"type": "object", "properties": map[string]any{
		"a": map[string]any{"type": "string"}, "t": map[string]any{"type": "string"}, "gone": map[string]any{"type": "string"},
		"items": map[string]any{"type": "array", "items": map[string]any{"$ref": "#/components/schemas/Inner"}}}}
	got := compareShape("Outer", reflect.TypeFor[outer](), schema, all, map[string]bool{})
	want := []string{
		"Inner.n: Go writes integer (int), the document says string",
		"Outer.extra: written by rest.outer but not documented",
		"Outer.gone: documented but rest.outer has no such field",
	}
	sort.Strings(got)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
