package labels

import (
	"encoding/json"
	"errors"
	"sort"

	"github.com/criticml/critic/domain"
)

// MetadataKey is where a label lives on a step: `steps[].metadata.label`.
const MetadataKey = "label"

// Labeling is a trace cut into chunks with the label each chunk carries.
type Labeling struct {
	Chunks []Chunk
	// Labels[i] is the label of Chunks[i], or nil when it has none (or an
	// invalid one, reported in Problems).
	Labels []*Label
	// Problems are the labels that were present but could not be used.
	Problems []Problem
	// Present is true when any step carried a label: the trace was labeled
	// offline and is used as it is, never sent to a model.
	Present bool
	// Imported[i] is true when Labels[i] came from the steps' own metadata
	// (an import) rather than from a labeling model.
	Imported []bool
}

// Problem is a label that was recorded but fails validation; its chunk is
// left unlabeled (so unscored), and the problem is shown to the user rather
// than silently dropped.
type Problem struct {
	StepIndex int    `json:"step_index"`
	ChunkID   string `json:"chunk_id,omitempty"`
	Message   string `json:"message"`
}

// FromSteps reads the labels of a trace: those it carries in its step
// metadata (an offline labeling run: each chunk's label is the one on its
// first step that has one, used as it is) and, for chunks without one, the
// labels a labeling model recorded (stored, by chunk id; nil for none).
// Imported labels keep their own chunk ids; references (verdict_target,
// duplicate_of) are checked against those ids and the trace's chunk ids.
func FromSteps(steps []domain.Step, stored map[string]Label) Labeling {
	l := Labeling{Chunks: Chunks(steps)}
	l.Labels = make([]*Label, len(l.Chunks))
	l.Imported = make([]bool, len(l.Chunks))
	at := make([]int, len(l.Chunks)) // step index each label came from
	known := map[string]Actor{}
	for _, c := range l.Chunks {
		known[c.ID] = c.Actor
	}
	imported := map[string]bool{}
	for ci, c := range l.Chunks {
		for _, si := range c.Steps {
			raw, ok := steps[si].Metadata[MetadataKey]
			if !ok || raw == nil {
				continue
			}
			l.Present = true
			b, err := json.Marshal(raw)
			if err != nil {
				l.Problems = append(l.Problems, Problem{StepIndex: si, Message: "label cannot be encoded: " + err.Error()})
				break
			}
			lb, err := Parse(b)
			if err != nil {
				l.Problems = append(l.Problems, Problem{StepIndex: si, Message: message(err)})
				break
			}
			if lb.Actor != "" && lb.Actor != c.Actor {
				l.Problems = append(l.Problems, Problem{StepIndex: si, ChunkID: lb.ChunkID,
					Message: "actor: the label says " + string(lb.Actor) + " but the step is a " + string(c.Actor) + " step"})
				break
			}
			if imported[lb.ChunkID] && lb.ChunkID != "" {
				l.Problems = append(l.Problems, Problem{StepIndex: si, ChunkID: lb.ChunkID, Message: "chunk_id: another chunk already uses this id"})
				break
			}
			if lb.ChunkID != "" {
				known[lb.ChunkID], imported[lb.ChunkID] = lb.Actor, true
			}
			l.Labels[ci], at[ci], l.Imported[ci] = &lb, si, true
			break
		}
	}
	for ci, c := range l.Chunks {
		if l.Labels[ci] != nil {
			continue
		}
		if lb, ok := stored[c.ID]; ok && lb.ChunkID == c.ID && lb.Actor == c.Actor {
			l.Present = true
			l.Labels[ci], at[ci] = &lb, c.Steps[0]
		}
	}
	earlier := map[string]bool{}
	for ci, lb := range l.Labels {
		if lb == nil {
			continue
		}
		if err := Validate(*lb, known, earlier); err != nil {
			l.Problems = append(l.Problems, Problem{StepIndex: at[ci], ChunkID: lb.ChunkID, Message: message(err)})
			l.Labels[ci] = nil
		}
		earlier[lb.ChunkID] = true
	}
	sort.SliceStable(l.Problems, func(i, j int) bool { return l.Problems[i].StepIndex < l.Problems[j].StepIndex })
	return l
}

func message(err error) string {
	if v, ok := errors.AsType[*domain.ValidationError](err); ok {
		return v.Error()
	}
	return err.Error()
}
