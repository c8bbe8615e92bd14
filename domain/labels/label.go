package labels

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/criticml/critic/domain"
)

// Label is a step label exactly as spec 001 names it (`steps[].metadata.label`).
// A user label fills Intent, Verdict, VerdictTarget and Sentiment; an agent
// label fills Type, Effect, Result, DuplicateOf, IsOutput, Outcome, Stance and
// Coverage; the other actor's fields stay empty (null or absent in JSON).
// VerdictTarget and DuplicateOf are chunk ids of the same trace.
type Label struct {
	ChunkID string `json:"chunk_id"`
	TaskID  string `json:"task_id"`
	Actor   Actor  `json:"actor"`

	Intent        string  `json:"intent,omitempty"`
	Verdict       string  `json:"verdict,omitempty"`
	VerdictTarget *string `json:"verdict_target,omitempty"`
	Sentiment     string  `json:"sentiment,omitempty"`

	Type        string  `json:"type,omitempty"`
	Effect      string  `json:"effect,omitempty"`
	Result      string  `json:"result,omitempty"`
	DuplicateOf *string `json:"duplicate_of,omitempty"`
	IsOutput    *bool   `json:"is_output,omitempty"`
	Outcome     string  `json:"outcome,omitempty"`
	Stance      string  `json:"stance,omitempty"`
	Coverage    string  `json:"coverage,omitempty"`

	// Evidence is what in the chunk (a short quote) supports the label.
	Evidence string `json:"evidence"`
	// Note is anything the labeler wants a reader to know.
	Note string `json:"note"`
}

// IsAnswer reports whether an agent chunk hands the user an output, which
// earns points by the user's reaction instead of costing work.
func (l Label) IsAnswer() bool { return l.Actor == ActorAgent && l.IsOutput != nil && *l.IsOutput }

// Limits on the free-text fields, so a labeler cannot smuggle a whole trace
// into a label.
const (
	MaxEvidence = 2000
	MaxNote     = 2000
	MaxID       = 200
)

// Parse decodes one label strictly (unknown fields, wrong types and trailing
// data are errors) as the labeler's output or an imported label must be.
// It does not check the vocabulary; Validate does.
func Parse(raw []byte) (Label, error) {
	var l Label
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return Label{}, &domain.ValidationError{Code: "invalid_label", Message: "label is not a label object: " + err.Error()}
	}
	if dec.More() {
		return Label{}, &domain.ValidationError{Code: "invalid_label", Message: "label has data after the object"}
	}
	return l, nil
}

// Validate checks l against the vocabulary and the schema's rules: the
// actor's own fields are all present and allowed, the other actor's are
// absent, references name known chunks (known maps every chunk id of the
// trace to its actor; nil skips the reference check), and a tool call's
// duplicate names an earlier agent chunk (earlier maps ids of chunks before
// this one; nil skips it). It reports the first problem, naming the field.
func Validate(l Label, known map[string]Actor, earlier map[string]bool) error {
	bad := func(field, format string, args ...any) error {
		return &domain.ValidationError{Code: "invalid_label", Field: field, Message: fmt.Sprintf(format, args...)}
	}
	if err := checkID("chunk_id", l.ChunkID); err != nil {
		return err
	}
	if err := checkID("task_id", l.TaskID); err != nil {
		return err
	}
	if len(l.Evidence) > MaxEvidence {
		return bad("evidence", "is longer than %d bytes", MaxEvidence)
	}
	if len(l.Note) > MaxNote {
		return bad("note", "is longer than %d bytes", MaxNote)
	}
	enum := func(name, v string) error {
		if v == "" {
			return bad(name, "is required for an %s label (one of %s)", l.Actor, strings.Join(names(name), ", "))
		}
		if !Allowed(name, v) {
			return bad(name, "%q is not one of %s", v, strings.Join(names(name), ", "))
		}
		return nil
	}
	absent := func(name string, set bool) error {
		if set {
			return bad(name, "belongs to the other actor's label; leave it out")
		}
		return nil
	}
	ref := func(name string, id *string, want Actor) error {
		if id == nil {
			return nil
		}
		if *id == "" {
			return bad(name, "is empty; use null for none")
		}
		if *id == l.ChunkID {
			return bad(name, "names the chunk itself")
		}
		if known == nil {
			return nil
		}
		a, ok := known[*id]
		if !ok {
			return bad(name, "names chunk %q, which is not in this trace", *id)
		}
		if a != want {
			return bad(name, "names chunk %q, a %s chunk; it must name an %s chunk", *id, a, want)
		}
		return nil
	}
	switch l.Actor {
	case ActorUser:
		for _, c := range []struct {
			name string
			set  bool
		}{{"type", l.Type != ""}, {"effect", l.Effect != ""}, {"result", l.Result != ""}, {"duplicate_of", l.DuplicateOf != nil},
			{"is_output", l.IsOutput != nil}, {"outcome", l.Outcome != ""}, {"stance", l.Stance != ""}, {"coverage", l.Coverage != ""}} {
			if err := absent(c.name, c.set); err != nil {
				return err
			}
		}
		for _, c := range [][2]string{{"intent", l.Intent}, {"verdict", l.Verdict}, {"sentiment", l.Sentiment}} {
			if err := enum(c[0], c[1]); err != nil {
				return err
			}
		}
		if l.Verdict == VerdictNone && l.VerdictTarget != nil {
			return bad("verdict_target", "is set but verdict is none")
		}
		return ref("verdict_target", l.VerdictTarget, ActorAgent)
	case ActorAgent:
		for _, c := range []struct {
			name string
			set  bool
		}{{"intent", l.Intent != ""}, {"verdict", l.Verdict != ""}, {"verdict_target", l.VerdictTarget != nil}, {"sentiment", l.Sentiment != ""}} {
			if err := absent(c.name, c.set); err != nil {
				return err
			}
		}
		for _, c := range [][2]string{{"type", l.Type}, {"effect", l.Effect}, {"result", l.Result}, {"outcome", l.Outcome}, {"stance", l.Stance}, {"coverage", l.Coverage}} {
			if err := enum(c[0], c[1]); err != nil {
				return err
			}
		}
		if l.IsOutput == nil {
			return bad("is_output", "is required for an agent label (true or false)")
		}
		if l.Type == TypeToolCall && l.Effect == EffectNone {
			return bad("effect", "a tool call is a lookup or a change, not none")
		}
		if l.Type != TypeToolCall && l.Effect != EffectNone {
			return bad("effect", "only a tool call has an effect; use none for a %s", l.Type)
		}
		if l.Type != TypeToolCall && l.Result != ResultNone {
			return bad("result", "only a tool call has a result; use none for a %s", l.Type)
		}
		if l.Type == TypeAnswer && !*l.IsOutput {
			return bad("is_output", "an answer is an output; set it true")
		}
		if l.Type != TypeToolCall && l.DuplicateOf != nil {
			return bad("duplicate_of", "only a tool call repeats an earlier call")
		}
		if err := ref("duplicate_of", l.DuplicateOf, ActorAgent); err != nil {
			return err
		}
		if l.DuplicateOf != nil && earlier != nil && !earlier[*l.DuplicateOf] {
			return bad("duplicate_of", "names chunk %q, which does not come before this one", *l.DuplicateOf)
		}
		return nil
	case "":
		return bad("actor", "is required (user or agent)")
	default:
		return bad("actor", "%q is not user or agent", l.Actor)
	}
}

func checkID(field, v string) error {
	if v == "" {
		return &domain.ValidationError{Code: "invalid_label", Field: field, Message: "is required"}
	}
	if len(v) > MaxID {
		return &domain.ValidationError{Code: "invalid_label", Field: field, Message: fmt.Sprintf("is longer than %d bytes", MaxID)}
	}
	return nil
}
