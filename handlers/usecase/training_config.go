package usecase

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
)

// ParseTrainingConfig reads POST /reward-models' training_config:
// {annotation_source?, input_version?, criteria?, criterion?, exclude_disputed?}. Absent or null is the
// defaults; an unknown field or a wrong type is a 422 naming
// training_config.<field>. Values are checked by the command.
func ParseTrainingConfig(raw json.RawMessage) (*commands.TrainingConfig, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, domain.InvalidField("training_config", "must be an object")
	}
	cfg := &commands.TrainingConfig{}
	bad := func(field, msg string) error {
		return domain.InvalidField("training_config."+field, msg)
	}
	for name, v := range fields {
		isNull := string(bytes.TrimSpace(v)) == "null"
		msg := ""
		switch name {
		case "annotation_source":
			msg = setting(v, &cfg.AnnotationSource, "must be a string: explicit, feedback or automatic")
		case "input_version":
			msg = setting(v, &cfg.InputVersion, "must be the integer 1 or 3")
		case "criteria":
			if isNull {
				continue
			}
			var cs []string
			if err := json.Unmarshal(v, &cs); err != nil {
				var te *json.UnmarshalTypeError
				if errors.As(err, &te) || strings.Contains(err.Error(), "cannot unmarshal") {
					return nil, bad(name, "must be an array of strings")
				}
				return nil, bad(name, err.Error())
			}
			cfg.Criteria, cfg.CriteriaSet = cs, true
		case "criterion":
			msg = setting(v, &cfg.Criterion, "must be a criterion id (a string)")
		case "exclude_disputed":
			msg = setting(v, &cfg.ExcludeDisputed, "must be true or false")
		default:
			msg = "unknown field (allowed: annotation_source, input_version, criteria, criterion, exclude_disputed)"
		}
		if msg != "" {
			return nil, bad(name, msg)
		}
	}
	return cfg, nil
}

// setting decodes one training_config setting into a new *T (null leaves
// it unset: the default) and answers msg when the value is not a T.
func setting[T any](v json.RawMessage, dst **T, msg string) string {
	if string(bytes.TrimSpace(v)) == "null" {
		return ""
	}
	var x T
	if json.Unmarshal(v, &x) != nil {
		return msg
	}
	*dst = &x
	return ""
}
