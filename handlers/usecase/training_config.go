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
		return nil, &domain.ValidationError{Code: "invalid_request", Field: "training_config", Message: "must be an object"}
	}
	cfg := &commands.TrainingConfig{}
	bad := func(field, msg string) error {
		return &domain.ValidationError{Code: "invalid_request", Field: "training_config." + field, Message: msg}
	}
	for name, v := range fields {
		isNull := string(bytes.TrimSpace(v)) == "null"
		switch name {
		case "annotation_source":
			if isNull {
				continue
			}
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return nil, bad(name, "must be a string: explicit, feedback or automatic")
			}
			cfg.AnnotationSource = &s
		case "input_version":
			if isNull {
				continue
			}
			var n int
			if err := json.Unmarshal(v, &n); err != nil {
				return nil, bad(name, "must be the integer 1 or 3")
			}
			cfg.InputVersion = &n
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
			if isNull {
				continue
			}
			var id string
			if err := json.Unmarshal(v, &id); err != nil {
				return nil, bad(name, "must be a criterion id (a string)")
			}
			cfg.Criterion = &id
		case "exclude_disputed":
			if isNull {
				continue
			}
			var b bool
			if err := json.Unmarshal(v, &b); err != nil {
				return nil, bad(name, "must be true or false")
			}
			cfg.ExcludeDisputed = &b
		default:
			return nil, bad(name, "unknown field (allowed: annotation_source, input_version, criteria, criterion, exclude_disputed)")
		}
	}
	return cfg, nil
}
