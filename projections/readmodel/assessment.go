package readmodel

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/assessment"
	"github.com/criticml/critic/domain/labels"
)

// assess adds the automatic annotation to a trace detail: each scored step's
// breakdown as steps[].metadata.reward, the task scores as step_scores and
// the section tree as sections. It is derived on read from the stored steps
// (labels live in their metadata) by the same pure code the /query snapshot
// uses, so the two always agree and a change of rules needs no migration.
func (q *Queries) assess(ctx context.Context, d *TraceDetail) error {
	a, err := assessmentOf(ctx, q.pool, d.ID, d.Steps, d.Metadata)
	if err != nil {
		return err
	}
	// A label the step-label model made is shown where an imported one is
	// (steps[].metadata.label on the chunk's first step), so every reader —
	// the viewer's chips among them — sees automatic labels too. A chunk
	// with an imported label keeps it: the import is used as it is (spec
	// 001 "Step labels"), so the model's label never shows over it.
	modelLabels := a.ModelLabels()
	for i := range d.Steps {
		r, lb := a.Rewards[i], modelLabels[i]
		if r == nil && lb == nil {
			continue
		}
		md := map[string]json.RawMessage{}
		if raw := d.Steps[i].Metadata; len(raw) > 0 && string(raw) != "null" {
			if err := json.Unmarshal(raw, &md); err != nil {
				return fmt.Errorf("readmodel: step %s metadata: %w", d.Steps[i].ID, err)
			}
		}
		if r != nil {
			b, err := json.Marshal(r)
			if err != nil {
				return err
			}
			md[assessment.RewardKey] = b
		}
		if lb != nil {
			b, err := json.Marshal(lb)
			if err != nil {
				return err
			}
			md[labels.MetadataKey] = b
		}
		out, err := json.Marshal(md)
		if err != nil {
			return err
		}
		d.Steps[i].Metadata = out
	}
	stale, err := q.staleLabels(ctx, d.ID)
	if err != nil {
		return err
	}
	lab := assessment.Relabeling(a.Labeling, a.Labels, stale)
	var failure *string
	if lab.State == assessment.LabelingUnlabeled || lab.State == assessment.LabelingPartial {
		if failure, err = q.labelingFailure(ctx, d.ID); err != nil {
			return err
		}
	}
	lab = assessment.WithRun(lab, q.labeler, failure)
	d.StepScores, d.Sections, d.Labeling = a.StepScores, a.Sections, &lab
	return nil
}

// DomainStep decodes a stored step into the canonical step the domain rules
// read (tool input and metadata as JSON objects).
func DomainStep(s Step) (domain.Step, error) {
	st := domain.Step{Role: domain.Role(s.Role), Content: s.Content, ToolName: domain.OrEmpty(s.ToolName), ToolCallID: domain.OrEmpty(s.ToolCallID)}
	for _, f := range []struct {
		raw json.RawMessage
		dst *map[string]any
	}{{s.ToolInput, &st.ToolInput}, {s.Metadata, &st.Metadata}} {
		raw := bytes.TrimSpace(f.raw)
		if len(raw) == 0 || string(raw) == "null" || raw[0] != '{' {
			continue
		}
		if err := json.Unmarshal(raw, f.dst); err != nil {
			return st, err
		}
	}
	return st, nil
}
