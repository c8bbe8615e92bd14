package llm

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Schema is the subset of JSON Schema structured outputs need and every
// provider's strict mode accepts: objects with required properties and no
// others, strings (optionally an enum), booleans, integers, numbers, arrays
// and null unions. It marshals to JSON Schema for the request and validates
// answers on receipt, because no provider's promise is checked here on
// trust.
type Schema struct {
	Type        string             // object, string, boolean, integer, number, array
	Nullable    bool               // also accepts null
	Enum        []string           // string values allowed
	Properties  map[string]*Schema // object: every property is required
	Items       *Schema            // array
	Description string
	MaxLength   int // string, 0 = unbounded (checked here; not sent: strict modes reject it)
}

// Object, String, … build schemas tersely.
func Object(props map[string]*Schema) *Schema { return &Schema{Type: "object", Properties: props} }

// String is a string schema.
func String(desc string) *Schema { return &Schema{Type: "string", Description: desc} }

// NullableString is a string or null.
func NullableString(desc string) *Schema {
	return &Schema{Type: "string", Nullable: true, Description: desc}
}

// Enum is a string restricted to values.
func Enum(desc string, values ...string) *Schema {
	return &Schema{Type: "string", Enum: values, Description: desc}
}

// Bool is a boolean schema.
func Bool(desc string) *Schema { return &Schema{Type: "boolean", Description: desc} }

// Number is a number schema.
func Number(desc string) *Schema { return &Schema{Type: "number", Description: desc} }

// MarshalJSON writes the schema as JSON Schema (strict-mode compatible:
// additionalProperties false, every property required).
func (s *Schema) MarshalJSON() ([]byte, error) { return json.Marshal(s.jsonSchema()) }

func (s *Schema) jsonSchema() map[string]any {
	out := map[string]any{}
	if s.Nullable {
		out["type"] = []string{s.Type, "null"}
	} else {
		out["type"] = s.Type
	}
	if s.Description != "" {
		out["description"] = s.Description
	}
	if len(s.Enum) > 0 {
		enum := make([]any, 0, len(s.Enum)+1)
		for _, v := range s.Enum {
			enum = append(enum, v)
		}
		if s.Nullable {
			enum = append(enum, nil)
		}
		out["enum"] = enum
	}
	switch s.Type {
	case "object":
		props := map[string]any{}
		names := s.names()
		for _, n := range names {
			props[n] = s.Properties[n].jsonSchema()
		}
		out["properties"] = props
		out["required"] = names
		out["additionalProperties"] = false
	case "array":
		if s.Items != nil {
			out["items"] = s.Items.jsonSchema()
		}
	}
	return out
}

func (s *Schema) names() []string {
	names := slices.AppendSeq(make([]string, 0, len(s.Properties)), maps.Keys(s.Properties))
	slices.Sort(names)
	return names
}

// ValidationError is an answer that does not match the schema; Field is its
// JSON path ("label", "items[2].quote").
type ValidationError struct {
	Field   string
	Message string
}

func (e *ValidationError) Error() string {
	if e.Field == "" {
		return e.Message
	}
	return e.Field + ": " + e.Message
}

// Validate checks a decoded JSON value (encoding/json's any) against s.
func (s *Schema) Validate(v any) error { return s.validate("", v) }

func (s *Schema) validate(path string, v any) error {
	fail := func(format string, args ...any) error {
		return &ValidationError{Field: path, Message: fmt.Sprintf(format, args...)}
	}
	if v == nil {
		if s.Nullable {
			return nil
		}
		return fail("is null; want %s", s.Type)
	}
	switch s.Type {
	case "object":
		obj, ok := v.(map[string]any)
		if !ok {
			return fail("want an object, got %s", kind(v))
		}
		for _, n := range s.names() {
			val, ok := obj[n]
			if !ok {
				return &ValidationError{Field: join(path, n), Message: "is missing"}
			}
			if err := s.Properties[n].validate(join(path, n), val); err != nil {
				return err
			}
		}
		for n := range obj {
			if _, ok := s.Properties[n]; !ok {
				return &ValidationError{Field: join(path, n), Message: "is not an allowed field"}
			}
		}
	case "string":
		str, ok := v.(string)
		if !ok {
			return fail("want a string, got %s", kind(v))
		}
		if len(s.Enum) > 0 {
			if slices.Contains(s.Enum, str) {
				return nil
			}
			return fail("%q is not one of %s", str, strings.Join(s.Enum, ", "))
		}
		if s.MaxLength > 0 && len([]rune(str)) > s.MaxLength {
			return fail("is longer than %d characters", s.MaxLength)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return fail("want a boolean, got %s", kind(v))
		}
	case "number", "integer":
		f, ok := v.(float64)
		if !ok {
			return fail("want a number, got %s", kind(v))
		}
		if s.Type == "integer" && f != float64(int64(f)) {
			return fail("want an integer, got %v", f)
		}
	case "array":
		arr, ok := v.([]any)
		if !ok {
			return fail("want an array, got %s", kind(v))
		}
		if s.Items != nil {
			for i, x := range arr {
				if err := s.Items.validate(fmt.Sprintf("%s[%d]", path, i), x); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func kind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	}
	return fmt.Sprintf("%T", v)
}
