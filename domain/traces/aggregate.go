// Package traces is the trace aggregate: the state a command needs to decide
// what a new import means for a stored trace (first import, replacement,
// session sync or no-op), rebuilt from the trace's own stream.
package traces

import (
	"encoding/json"
	"reflect"
	"sort"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
)

// State is a trace as its stream describes it.
type State struct {
	ID         string
	OwnerID    string
	Version    int64 // last stream version applied; 0 = the stream is empty
	Exists     bool  // imported and not deleted
	Revision   int
	ExternalID string
	SourceID   string // explicit source id, preserved across upserts
	// SourceFormat and Metadata are the current revision's (the shared
	// evaluator slices by agent and metadata.domain).
	SourceFormat string
	Metadata     map[string]any
	Steps        []events.StepRecord
	// OTelSpans holds the raw spans the live receiver stored, by span id.
	OTelSpans map[string]json.RawMessage
	// Annotations are the trace's live annotations, by id.
	Annotations map[string]*Annotation
	// Title is the current title; TitleDerived when it is the fallback
	// awaiting a generated one, Generated when the fast model wrote it.
	Title        string
	TitleDerived bool
	Generated    bool
	// Contribute is the trace's consent to train the shared evaluator
	// (trace.contribution_set); false until someone opts it in, and reset
	// when the trace is deleted.
	Contribute bool
	// Compared holds "<finding id>/<reviewer id>" of every reviewed
	// comparison, so one reviewer answers each comparison once.
	Compared map[string]bool
	// Comparisons are the reviewed comparisons of the trace, oldest first
	// (a replaced revision's are kept in the log; readers match step ids).
	Comparisons []events.ComparisonReviewedV1
}

// Annotation is an annotation as the trace aggregate tracks it.
type Annotation struct {
	ID             string
	StepID         string
	Rating         *int
	Comment        *string
	LabelError     bool
	LabelErrorNote *string
	AuthorID       string
}

// Apply folds one event of the trace's stream into the state. Appliers never
// fail: an event in the log is a fact.
func (s *State) Apply(e events.Envelope) {
	s.Version = e.Version
	s.OwnerID = e.OwnerID
	switch e.Type {
	case events.TraceImported:
		var p events.TraceImportedV1
		_ = e.Decode(&p)
		s.ID, s.Exists, s.Revision, s.ExternalID, s.Steps = p.TraceID, true, p.Revision, p.ExternalID, p.Steps
		s.SourceID = p.SourceID
		s.SourceFormat, s.Metadata = p.SourceFormat, p.Metadata
		s.Title, s.TitleDerived, s.Generated = p.Title, p.TitleDerived, false
	case events.TraceRevised:
		var p events.TraceRevisedV1
		_ = e.Decode(&p)
		s.Revision = p.Revision
		s.SourceID = p.SourceID
		s.SourceFormat, s.Metadata = p.SourceFormat, p.Metadata
		if p.Title != s.Title || p.TitleDerived {
			s.Generated = false
		}
		s.Title, s.TitleDerived = p.Title, p.TitleDerived
		if p.Mode == events.RevisionAppended {
			s.Steps = append(s.Steps, p.Steps...)
		} else {
			s.Steps = p.Steps
		}
	case events.TraceDeleted:
		s.Exists = false
		s.Steps = nil
		s.OTelSpans = nil
		s.Annotations = nil
		s.Contribute = false
		s.Compared = nil
		s.Comparisons = nil
	case events.ComparisonReviewed:
		var p events.ComparisonReviewedV1
		_ = e.Decode(&p)
		if s.Compared == nil {
			s.Compared = map[string]bool{}
		}
		s.Compared[p.FindingID+"/"+p.ReviewerID] = true
		s.Comparisons = append(s.Comparisons, p)
	case events.TraceContributionSet:
		var p events.TraceContributionSetV1
		_ = e.Decode(&p)
		s.Contribute = p.Contribute
	case events.AnnotationAdded:
		var p events.AnnotationAddedV1
		_ = e.Decode(&p)
		if s.Annotations == nil {
			s.Annotations = map[string]*Annotation{}
		}
		s.Annotations[p.AnnotationID] = &Annotation{ID: p.AnnotationID, StepID: p.StepID, Rating: p.Rating, Comment: p.Comment, AuthorID: p.AuthorID}
	case events.AnnotationEdited:
		var p events.AnnotationEditedV1
		_ = e.Decode(&p)
		if a := s.Annotations[p.AnnotationID]; a != nil {
			a.Rating, a.Comment, a.LabelError, a.LabelErrorNote = p.Rating, p.Comment, p.LabelError, p.LabelErrorNote
		}
	case events.TraceTitled:
		var p events.TraceTitledV1
		_ = e.Decode(&p)
		s.Title, s.TitleDerived, s.Generated = p.Title, false, true
	case events.AnnotationRemoved:
		var p events.AnnotationRemovedV1
		_ = e.Decode(&p)
		delete(s.Annotations, p.AnnotationID)
	case events.OTelSpansReceived:
		var p events.OTelSpansReceivedV1
		_ = e.Decode(&p)
		s.ID = p.TraceID
		s.ExternalID = p.OTelTraceID
		if s.OTelSpans == nil {
			s.OTelSpans = map[string]json.RawMessage{}
		}
		for _, sp := range p.Spans {
			s.OTelSpans[sp.SpanID] = sp.JSON
		}
	}
}

// ImportInput is one parsed trace with what the request said about it.
type ImportInput struct {
	TraceID          string
	Trace            domain.Trace
	Format           string
	ExplicitSourceID string
	NewID            func() string // fresh step ids; the command supplies them
}

// Decision is the event an import produces (Type, Payload), or none for a
// no-op, plus the annotation removals it implies.
type Decision struct {
	Type     string
	Payload  any
	NoOp     bool
	Removals []events.AnnotationRemovedV1
}

// DecideImport decides what importing in means for the stored trace s:
//   - nothing stored (or deleted): trace.imported at revision s.Revision+1;
//   - a session snapshot (Claude Code, Codex) that extends the stored steps:
//     trace.revised in "appended" mode, keeping every existing step id;
//     one that is equal to or a prefix of the stored steps: a no-op;
//     one that diverges: a SyncError, the stored trace untouched;
//   - anything else: trace.revised in "replaced" mode with new step ids.
func DecideImport(s State, in ImportInput) (Decision, error) {
	t := in.Trace
	title, derived := t.Title, false
	if title == "" {
		title, derived = domain.DefaultTitle(t.Steps), true
	}
	sourceID := in.ExplicitSourceID
	if sourceID == "" {
		sourceID = s.SourceID // an earlier explicit id survives an upsert without one
	}
	meta := copyMap(t.Metadata)
	if sourceID != "" {
		if meta == nil {
			meta = map[string]any{}
		}
		meta["source_id"] = sourceID
	}

	if !s.Exists {
		return Decision{Type: events.TraceImported, Payload: events.TraceImportedV1{
			TraceID: in.TraceID, ExternalID: t.ExternalID, Title: title, SourceFormat: in.Format,
			SourceID: sourceID, Metadata: meta, Revision: s.Revision + 1,
			Steps: records(t.Steps, 0, in.NewID), Spans: t.Spans, TitleDerived: derived,
		}}, nil
	}

	if t.SessionSync {
		common := len(s.Steps)
		if len(t.Steps) < common {
			common = len(t.Steps)
		}
		for i := 0; i < common; i++ {
			if !sameStep(s.Steps[i].Step, t.Steps[i]) {
				return Decision{}, &domain.SyncError{Message: "trace_sync_error: the session snapshot diverges from the stored trace at step " +
					itoa(i) + "; the stored trace and its review are kept"}
			}
		}
		if len(t.Steps) <= len(s.Steps) {
			return Decision{NoOp: true}, nil
		}
		if derived && s.Generated {
			// A growing session keeps the title the fast model wrote.
			title, derived = s.Title, false
		}
		return Decision{Type: events.TraceRevised, Payload: events.TraceRevisedV1{
			TraceID: in.TraceID, Revision: s.Revision + 1, Mode: events.RevisionAppended,
			Title: title, SourceFormat: in.Format, SourceID: sourceID, Metadata: meta,
			Steps: records(t.Steps[len(s.Steps):], len(s.Steps), in.NewID), Spans: t.Spans, TitleDerived: derived,
		}}, nil
	}

	removed := make([]string, len(s.Steps))
	for i, st := range s.Steps {
		removed[i] = st.ID
	}
	return Decision{Type: events.TraceRevised, Payload: events.TraceRevisedV1{
		TraceID: in.TraceID, Revision: s.Revision + 1, Mode: events.RevisionReplaced,
		Title: title, SourceFormat: in.Format, SourceID: sourceID, Metadata: meta,
		Steps: records(t.Steps, 0, in.NewID), RemovedStepIDs: removed, Spans: t.Spans, TitleDerived: derived,
	}, Removals: s.stepAnnotationRemovals(in.TraceID)}, nil
}

// stepAnnotationRemovals removes every step-level annotation: a replacement
// gives all steps new ids. Trace-level annotations survive.
func (s State) stepAnnotationRemovals(traceID string) []events.AnnotationRemovedV1 {
	var out []events.AnnotationRemovedV1
	for _, id := range sortedKeys(s.Annotations) {
		if s.Annotations[id].StepID != "" {
			out = append(out, events.AnnotationRemovedV1{AnnotationID: id, TraceID: traceID, Reason: events.RemovedStepRemoved})
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func records(steps []domain.Step, offset int, newID func() string) []events.StepRecord {
	out := make([]events.StepRecord, len(steps))
	for i, st := range steps {
		out[i] = events.StepRecord{ID: newID(), Index: offset + i, Step: st}
	}
	return out
}

// sameStep compares what a step says, not when it was recorded: a session
// re-export may carry refreshed metadata for the same message.
func sameStep(a, b domain.Step) bool {
	if a.Role != b.Role || a.Content != b.Content || a.ToolName != b.ToolName || a.ToolCallID != b.ToolCallID {
		return false
	}
	if len(a.ToolInput) == 0 && len(b.ToolInput) == 0 {
		return true
	}
	// Inputs may have gone through JSON once (stored) and not yet (parsed):
	// compare their canonical JSON.
	ja, _ := json.Marshal(a.ToolInput)
	jb, _ := json.Marshal(b.ToolInput)
	return reflect.DeepEqual(ja, jb)
}

func copyMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}
