// Package criteria is the account's structured review criteria (issue 33):
// binary, categorical or 1..N scale questions a reviewer answers about a
// trace, an assistant reply or a tool call. The aggregate is the account's
// criteria stream; a criterion's values are annotations on traces, checked
// here (CheckValue) and turned into training weights here (Weight), so the
// API, the read models and training read a value the same way.
package criteria

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
)

// Kinds of criterion.
const (
	KindBinary      = "binary"      // values "yes" / "no"
	KindCategorical = "categorical" // values are label names
	KindScale       = "scale"       // values are integers 1..scale_max
)

// What a criterion's values apply to.
const (
	AppliesToTrace     = "trace"     // the whole trace (no step_id)
	AppliesToAssistant = "assistant" // an assistant reply: not a tool call, not thinking
	AppliesToToolCall  = "tool_call" // an assistant tool call
)

// Limits of a definition.
const (
	MaxNameRunes         = 80
	MaxDescriptionRunes  = 4000
	MaxLabelRunes        = 40
	MinLabels, MaxLabels = 2, 9
	MinScale, MaxScale   = 2, 10
	// MaxGuidelinesBytes bounds PUT /guidelines.
	MaxGuidelinesBytes = 64 << 10
)

// Criterion is one criterion as its account's stream describes it.
type Criterion struct {
	ID          string
	Name        string
	Description string
	Kind        string
	Labels      []events.CriterionLabel
	ScaleMax    int
	AppliesTo   string
	Archived    bool
	CreatedAt   time.Time
	// names maps every name a label has had to the label's index: a value
	// stored under a former name still counts as that label in training,
	// and no later label may take the name (the value would then be
	// ambiguous).
	names map[string]int
}

// State is an account's criteria.
type State struct {
	OwnerID  string
	Version  int64
	Criteria map[string]*Criterion
	// Order is the criteria's ids in creation order.
	Order []string
}

// Apply folds one event of a criteria stream into the state.
func (s *State) Apply(e events.Envelope) error {
	s.Version, s.OwnerID = e.Version, e.OwnerID
	switch e.Type {
	case events.CriterionDefined:
		var p events.CriterionDefinedV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		if s.Criteria == nil {
			s.Criteria = map[string]*Criterion{}
		}
		c := &Criterion{ID: p.CriterionID, Name: p.Name, Description: p.Description, Kind: p.Kind,
			ScaleMax: p.ScaleMax, AppliesTo: p.AppliesTo, CreatedAt: e.RecordedAt}
		c.setLabels(p.Labels)
		s.Criteria[p.CriterionID] = c
		s.Order = append(s.Order, p.CriterionID)
	case events.CriterionChanged:
		var p events.CriterionChangedV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		if c := s.Criteria[p.CriterionID]; c != nil {
			c.Name, c.Description = p.Name, p.Description
			c.setLabels(p.Labels)
		}
	case events.CriterionArchived:
		var p events.CriterionArchivedV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		if c := s.Criteria[p.CriterionID]; c != nil {
			c.Archived = true
		}
	}
	return nil
}

func (c *Criterion) setLabels(labels []events.CriterionLabel) {
	c.Labels = labels
	if c.names == nil {
		c.names = map[string]int{}
	}
	for i, l := range labels {
		c.names[l.Name] = i
	}
}

// Fold rebuilds an account's criteria from its stream.
func Fold(stream []events.Envelope) (State, error) {
	return events.Fold[State](stream)
}

// Get returns a criterion of the account, archived or not.
func (s State) Get(id string) (*Criterion, bool) {
	c, ok := s.Criteria[id]
	return c, ok
}

// LabelInput is one label of a request (nil score: 0).
type LabelInput struct {
	Name  string
	Score *int
}

// DefineInput is POST /criteria after decoding (nil = absent).
type DefineInput struct {
	CriterionID string
	Name        *string
	Description *string
	Kind        *string
	Labels      []LabelInput
	ScaleMax    *int
	AppliesTo   *string
}

func invalid(field, format string, args ...any) error {
	return &domain.ValidationError{Code: "invalid_criterion", Field: field, Message: fmt.Sprintf(format, args...)}
}

// DecideDefine checks a new criterion: a name of 1–80 characters that no
// live criterion of the account has (case aside; 409 otherwise); a kind
// with exactly its own settings — categorical 2–9 labels with distinct
// names of 1–40 characters and scores -1, 0 or 1, scale a scale_max of
// 2–10, binary neither; and what its values apply to.
func DecideDefine(s State, in DefineInput) (events.CriterionDefinedV1, error) {
	var out events.CriterionDefinedV1
	if in.Name == nil {
		return out, invalid("name", "name is required (1–%d characters)", MaxNameRunes)
	}
	name, err := checkName(s, "", *in.Name)
	if err != nil {
		return out, err
	}
	desc, err := checkDescription(in.Description)
	if err != nil {
		return out, err
	}
	if in.Kind == nil {
		return out, invalid("kind", "kind is required: binary, categorical or scale")
	}
	if in.AppliesTo == nil {
		return out, invalid("applies_to", "applies_to is required: trace, assistant or tool_call")
	}
	switch *in.AppliesTo {
	case AppliesToTrace, AppliesToAssistant, AppliesToToolCall:
	default:
		return out, invalid("applies_to", "%q is not trace, assistant or tool_call", *in.AppliesTo)
	}
	out = events.CriterionDefinedV1{CriterionID: in.CriterionID, Name: name, Description: desc, Kind: *in.Kind, AppliesTo: *in.AppliesTo}
	switch *in.Kind {
	case KindBinary:
		if len(in.Labels) > 0 {
			return out, invalid("labels", "a binary criterion has no labels: its values are yes and no")
		}
		if in.ScaleMax != nil {
			return out, invalid("scale_max", "a binary criterion has no scale_max: its values are yes and no")
		}
	case KindCategorical:
		if in.ScaleMax != nil {
			return out, invalid("scale_max", "a categorical criterion has labels, not a scale_max")
		}
		labels, err := checkLabels(nil, in.Labels)
		if err != nil {
			return out, err
		}
		out.Labels = labels
	case KindScale:
		if len(in.Labels) > 0 {
			return out, invalid("labels", "a scale criterion has no labels: its values are 1..scale_max")
		}
		if in.ScaleMax == nil {
			return out, invalid("scale_max", "a scale criterion needs scale_max (%d–%d)", MinScale, MaxScale)
		}
		if *in.ScaleMax < MinScale || *in.ScaleMax > MaxScale {
			return out, invalid("scale_max", "scale_max must be %d–%d, not %d", MinScale, MaxScale, *in.ScaleMax)
		}
		out.ScaleMax = *in.ScaleMax
	default:
		return out, invalid("kind", "%q is not binary, categorical or scale", *in.Kind)
	}
	return out, nil
}

// ChangeInput is PATCH /criteria/{id} after decoding (nil = absent).
type ChangeInput struct {
	CriterionID string
	Name        *string
	Description *string
	Labels      []LabelInput
	LabelsSet   bool
}

// DecideChange renames, re-describes or relabels a live criterion. Labels
// may be renamed, re-scored or appended but never removed or reordered —
// label i of the request is label i of the criterion — so every stored
// value keeps naming the same choice; a name a label once had is not
// given to another one.
func DecideChange(s State, in ChangeInput) (events.CriterionChangedV1, error) {
	c, ok := s.Criteria[in.CriterionID]
	if !ok {
		return events.CriterionChangedV1{}, domain.NotFound("criterion", in.CriterionID)
	}
	if c.Archived {
		return events.CriterionChangedV1{}, invalid("criterion_id", "criterion %q is archived: it cannot be changed", c.Name)
	}
	out := events.CriterionChangedV1{CriterionID: c.ID, Name: c.Name, Description: c.Description, Labels: c.Labels}
	if in.Name != nil {
		name, err := checkName(s, c.ID, *in.Name)
		if err != nil {
			return out, err
		}
		out.Name = name
	}
	if in.Description != nil {
		desc, err := checkDescription(in.Description)
		if err != nil {
			return out, err
		}
		out.Description = desc
	}
	if in.LabelsSet {
		if c.Kind != KindCategorical {
			return out, invalid("labels", "only a categorical criterion has labels; %q is %s", c.Name, c.Kind)
		}
		if len(in.Labels) < len(c.Labels) {
			return out, invalid("labels", "labels can be renamed, re-scored or appended, never removed (stored values name them): give all %d labels, in their order", len(c.Labels))
		}
		labels, err := checkLabels(c.names, in.Labels)
		if err != nil {
			return out, err
		}
		out.Labels = labels
	}
	return out, nil
}

// DecideArchive archives a live criterion; archiving an archived one
// changes nothing (ok false).
func DecideArchive(s State, id string) (events.CriterionArchivedV1, bool, error) {
	c, ok := s.Criteria[id]
	if !ok {
		return events.CriterionArchivedV1{}, false, domain.NotFound("criterion", id)
	}
	return events.CriterionArchivedV1{CriterionID: id}, !c.Archived, nil
}

// DecideGuidelines checks the account's new guidelines.
func DecideGuidelines(markdown *string) (events.GuidelinesSetV1, error) {
	if markdown == nil {
		return events.GuidelinesSetV1{}, domain.InvalidField("markdown", "markdown is required (an empty string clears the guidelines)")
	}
	if len(*markdown) > MaxGuidelinesBytes {
		return events.GuidelinesSetV1{}, domain.InvalidField("markdown",
			fmt.Sprintf("guidelines are at most %d bytes (64 KiB), not %d", MaxGuidelinesBytes, len(*markdown)))
	}
	if err := domain.CheckText("markdown", *markdown, MaxGuidelinesBytes); err != nil {
		return events.GuidelinesSetV1{}, err
	}
	return events.GuidelinesSetV1{Markdown: *markdown}, nil
}

func checkName(s State, self, name string) (string, error) {
	if err := domain.CheckText("name", name, domain.MaxNameBytes); err != nil {
		return "", err
	}
	name = strings.TrimSpace(name)
	if n := utf8.RuneCountInString(name); n < 1 || n > MaxNameRunes {
		return "", invalid("name", "name must be 1–%d characters, not %d", MaxNameRunes, n)
	}
	for _, id := range s.Order {
		c := s.Criteria[id]
		if id != self && !c.Archived && strings.EqualFold(c.Name, name) {
			return "", &domain.ConflictError{Code: "criterion_exists", Message: fmt.Sprintf("name: the account already has a criterion named %q (%s)", c.Name, c.ID)}
		}
	}
	return name, nil
}

func checkDescription(d *string) (string, error) {
	if d == nil {
		return "", nil
	}
	if err := domain.CheckText("description", *d, domain.MaxCommentBytes); err != nil {
		return "", err
	}
	desc := strings.TrimSpace(*d)
	if n := utf8.RuneCountInString(desc); n > MaxDescriptionRunes {
		return "", invalid("description", "description must be at most %d characters, not %d", MaxDescriptionRunes, n)
	}
	return desc, nil
}

// checkLabels checks a categorical criterion's labels; names are every
// name its labels have had, by label index (nil for a new criterion).
func checkLabels(names map[string]int, in []LabelInput) ([]events.CriterionLabel, error) {
	if len(in) < MinLabels || len(in) > MaxLabels {
		return nil, invalid("labels", "a categorical criterion needs %d–%d labels, not %d", MinLabels, MaxLabels, len(in))
	}
	out := make([]events.CriterionLabel, len(in))
	for i, l := range in {
		field := fmt.Sprintf("labels[%d]", i)
		if err := domain.CheckText(field+".name", l.Name, domain.MaxNameBytes); err != nil {
			return nil, err
		}
		name := strings.TrimSpace(l.Name)
		if n := utf8.RuneCountInString(name); n < 1 || n > MaxLabelRunes {
			return nil, invalid(field+".name", "a label name must be 1–%d characters, not %d", MaxLabelRunes, n)
		}
		for j := range i {
			if strings.EqualFold(out[j].Name, name) {
				return nil, invalid(field+".name", "label names must be distinct: %q is also labels[%d]", name, j)
			}
		}
		if k, ok := names[name]; ok && k != i {
			return nil, invalid(field+".name", "%q was the name of labels[%d]: values stored under it mean that label, so it cannot name another", name, k)
		}
		score := 0
		if l.Score != nil {
			score = *l.Score
		}
		if score < -1 || score > 1 {
			return nil, invalid(field+".score", "a label's score must be -1, 0 or 1, not %d", score)
		}
		out[i] = events.CriterionLabel{Name: name, Score: score}
	}
	return out, nil
}

// CheckValue checks a value given for c and returns it as it is stored:
// "yes" or "no" for a binary criterion, a label name for a categorical
// one, an integer 1..scale_max (a JSON number) for a scale.
func (c *Criterion) CheckValue(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, invalid("value", "value is required for criterion %q (%s)", c.Name, c.allowed())
	}
	switch c.Kind {
	case KindBinary, KindCategorical:
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, invalid("value", "criterion %q takes a string: %s", c.Name, c.allowed())
		}
		if c.Kind == KindBinary && (s == "yes" || s == "no") {
			return json.Marshal(s)
		}
		if c.Kind == KindCategorical && slices.ContainsFunc(c.Labels, func(l events.CriterionLabel) bool { return l.Name == s }) {
			return json.Marshal(s)
		}
		return nil, invalid("value", "%q is not a value of criterion %q: %s", s, c.Name, c.allowed())
	case KindScale:
		var n json.Number
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&n); err != nil || raw[0] == '"' {
			return nil, invalid("value", "criterion %q takes a number: %s", c.Name, c.allowed())
		}
		v, err := strconv.Atoi(n.String())
		if err != nil {
			if f, ferr := n.Float64(); ferr == nil && f == float64(int(f)) {
				v, err = int(f), nil
			}
		}
		if err != nil || v < 1 || v > c.ScaleMax {
			return nil, invalid("value", "%s is not a value of criterion %q: %s", n.String(), c.Name, c.allowed())
		}
		return json.RawMessage(strconv.Itoa(v)), nil
	}
	return nil, invalid("value", "criterion %q has an unknown kind %q", c.Name, c.Kind)
}

func (c *Criterion) allowed() string {
	switch c.Kind {
	case KindBinary:
		return `"yes" or "no"`
	case KindCategorical:
		names := make([]string, len(c.Labels))
		for i, l := range c.Labels {
			names[i] = strconv.Quote(l.Name)
		}
		return "one of " + strings.Join(names, ", ")
	case KindScale:
		return fmt.Sprintf("an integer from 1 to %d", c.ScaleMax)
	}
	return "no values"
}

// Weight is what a stored value counts for when a reward model trains on
// c (training_config.criterion): binary yes +1, no -1; a categorical
// label its score; a scale value v counts v − (scale_max+1)/2, doubled
// here (2v − scale_max − 1) so a midpoint stays an integer — only the
// sign of a target's sum matters, and all weights of one criterion share
// the factor. ok is false for a value c does not know (it is skipped).
func (c *Criterion) Weight(raw json.RawMessage) (w int, ok bool) {
	switch c.Kind {
	case KindBinary:
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return 0, false
		}
		switch s {
		case "yes":
			return 1, true
		case "no":
			return -1, true
		}
	case KindCategorical:
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return 0, false
		}
		if i, ok := c.names[s]; ok && i < len(c.Labels) {
			return c.Labels[i].Score, true
		}
	case KindScale:
		v, err := strconv.Atoi(string(bytes.TrimSpace(raw)))
		if err == nil && v >= 1 && v <= c.ScaleMax {
			return 2*v - c.ScaleMax - 1, true
		}
	}
	return 0, false
}

// Renames lists the label renames from old to new labels (old name → new
// name), which readers apply to stored values so a value keeps naming its
// label.
func Renames(old, new []events.CriterionLabel) map[string]string {
	out := map[string]string{}
	for i := range min(len(old), len(new)) {
		if old[i].Name != new[i].Name {
			out[old[i].Name] = new[i].Name
		}
	}
	return out
}

// ValueText is a stored value as SQL shows it (annotations.value): the
// string itself for a string, the number's text for a number.
func ValueText(raw json.RawMessage) *string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return &s
	}
	t := string(raw)
	return &t
}
