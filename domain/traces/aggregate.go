// Package traces is the trace aggregate: the state a command needs to decide
// what a new import means for a stored trace (first import, replacement,
// session sync or no-op), rebuilt from the trace's own stream.
package traces

import (
	"bytes"
	"cmp"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strconv"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/labels"
	"github.com/criticml/critic/domain/stepscores"
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
	// SourceFormat, Metadata and Spans are the latest revision's, so a live
	// source that re-sends the same trace can tell "nothing changed" from
	// "changed" (and the shared evaluator slices by agent and
	// metadata.domain).
	SourceFormat string
	Metadata     map[string]any
	Spans        []domain.Span
	Steps        []events.StepRecord
	// OTelSpans holds the raw spans the live receiver stored, by span id.
	OTelSpans map[string]json.RawMessage
	// OTelUnbuilt holds the ids of the raw spans stored since the trace
	// was last imported or revised (while it had nothing to review yet):
	// every other stored span is in Spans as built from the copy stored.
	OTelUnbuilt map[string]bool
	// Erased is set once the trace was erased (trace.erased: deleted,
	// past its retention, or its account erased). Erasure is final: the
	// keyring never makes its stream a new key, so an import or a live
	// export of the same id again is refused for that trace alone
	// (ErasedMessage) rather than failing the request's other traces.
	Erased bool
	// OTelFiledIn is set in an OTel trace's own stream when the receiver
	// filed the trace into a conversation of several: that conversation's
	// key (events.OTelSpansReceivedV1.FiledIn).
	OTelFiledIn string
	// Annotations are the trace's live annotations, by id.
	Annotations map[string]*Annotation
	// EverAnnotated holds the id of every annotation added since the trace
	// was (re)imported, removed ones too: an imported review (a Langfuse
	// score) a reviewer deleted is not brought back by the next import.
	EverAnnotated map[string]bool
	// Title is the current title; TitleDerived when it is the fallback
	// awaiting a generated one, Generated when the fast model wrote it.
	Title        string
	TitleDerived bool
	Generated    bool
	// Labeled holds the chunk ids a labeling model recorded labels for
	// (trace.steps_labeled); chunk ids are content hashes, so they outlive
	// revisions and a grown trace asks only for its new chunks.
	Labeled map[string]bool
	// StepLabels are those labels by chunk id (the latest for each chunk):
	// what training from automatic annotations scores, as of any point of
	// the log.
	StepLabels map[string]labels.Label
	// Stale holds the labeled chunk ids a rescore (a relabel request) asked
	// to label anew: their labels still count until a new one supersedes
	// them, but the labeler treats them as missing.
	Stale map[string]bool
	// QualityChecks are the grading model's answers by chunk id (the latest
	// for each chunk, trace.steps_quality_checked): what the step scores
	// blend, as of any point of the log.
	QualityChecks map[string]stepscores.Check
	// LabelingFailed is the revision whose last labeling run failed, with
	// the reason; 0 when the latest run did not fail or was retried.
	LabelingFailed      int
	LabelingFailedError string
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
	// Adjudications are the final judgments of disputed targets by
	// AdjudicationKey (the latest for each), which training counts instead
	// of the members' ratings or values there (issue 36).
	Adjudications map[string]events.AnnotationAdjudicatedV1
}

// AdjudicationKey names an adjudicated target: a step ("" = the whole
// trace) and a criterion ("" = the rating).
func AdjudicationKey(stepID, criterionID string) string { return stepID + "/" + criterionID }

// Annotation is an annotation as the trace aggregate tracks it.
type Annotation struct {
	ID             string
	StepID         string
	Rating         *int
	Comment        *string
	LabelError     bool
	LabelErrorNote *string
	AuthorID       string
	// CriterionID and Value are a criterion's value ("" and nil for a
	// rating or comment).
	CriterionID string
	Value       json.RawMessage
}

// StepList is the trace's steps without their ids and indexes.
func (s State) StepList() []domain.Step {
	steps := make([]domain.Step, len(s.Steps))
	for i, r := range s.Steps {
		steps[i] = r.Step
	}
	return steps
}

// StepIDs are the ids of the trace's steps, in order.
func (s State) StepIDs() []string {
	ids := make([]string, len(s.Steps))
	for i, r := range s.Steps {
		ids[i] = r.ID
	}
	return ids
}

// AnnotationsInOrder lists the live annotations in id order: the order
// pair construction and feedback read them in, so a rebuild from the log
// gives the same dataset.
func (s State) AnnotationsInOrder() []*Annotation {
	out := make([]*Annotation, 0, len(s.Annotations))
	for _, id := range slices.Sorted(maps.Keys(s.Annotations)) {
		out = append(out, s.Annotations[id])
	}
	return out
}

// Apply folds one event of the trace's stream into the state. An event in
// the log is a fact, so the only failure is a payload that cannot be read
// (an UnreadableError): the caller must stop rather than decide on a state
// that silently misses it, exactly as the read model stops on it.
func (s *State) Apply(e events.Envelope) error {
	s.Version = e.Version
	s.OwnerID = e.OwnerID
	switch e.Type {
	case events.TraceImported:
		var p events.TraceImportedV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		s.ID, s.Exists, s.Revision, s.ExternalID, s.Steps = p.TraceID, true, p.Revision, p.ExternalID, p.Steps
		s.SourceID, s.SourceFormat, s.Metadata, s.Spans = p.SourceID, p.SourceFormat, p.Metadata, p.Spans
		s.Title, s.TitleDerived, s.Generated = p.Title, p.TitleDerived, false
		s.OTelUnbuilt = nil
	case events.TraceRevised:
		var p events.TraceRevisedV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		s.Revision, s.SourceID, s.SourceFormat, s.Metadata = p.Revision, p.SourceID, p.SourceFormat, p.Metadata
		if p.Title != s.Title || p.TitleDerived {
			s.Generated = false
		}
		s.Title, s.TitleDerived = p.Title, p.TitleDerived
		if p.SpansDelta {
			s.Spans = mergeSpans(s.Spans, p.Spans, p.SpanOrder)
		} else {
			s.Spans = p.Spans
		}
		s.OTelUnbuilt = nil
		if p.Mode == events.RevisionAppended {
			s.Steps = append(s.Steps, p.Steps...)
		} else {
			s.Steps = p.Steps
		}
	case events.TraceStepsLabeled:
		var p events.TraceStepsLabeledV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		if s.Labeled == nil {
			s.Labeled, s.StepLabels = map[string]bool{}, map[string]labels.Label{}
		}
		for _, l := range p.Labels {
			s.Labeled[l.ChunkID] = true
			s.StepLabels[l.ChunkID] = l
			delete(s.Stale, l.ChunkID)
		}
	case events.TraceStepsQualityChecked:
		var p events.TraceStepsQualityCheckedV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		if s.QualityChecks == nil {
			s.QualityChecks = map[string]stepscores.Check{}
		}
		for _, c := range p.Checks {
			c.Model = p.Model
			s.QualityChecks[c.ChunkID] = c
		}
	case events.TraceLabelingFailed:
		var p events.TraceLabelingFailedV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		s.LabelingFailed, s.LabelingFailedError = p.Revision, p.Error
	case events.TraceLabelingRequested:
		s.LabelingFailed, s.LabelingFailedError = 0, ""
		var p events.TraceLabelingRequestedV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		if p.Relabel {
			s.Stale = make(map[string]bool, len(s.Labeled))
			maps.Copy(s.Stale, s.Labeled) // every labeled chunk, each true
		}
	case events.TraceErased:
		s.Erased = true
	case events.TraceDeleted:
		s.Exists, s.Contribute = false, false
		s.Labeled, s.StepLabels, s.Stale = nil, nil, nil
		s.LabelingFailed, s.LabelingFailedError = 0, ""
		s.Steps, s.Title, s.Metadata, s.Spans = nil, "", nil, nil
		s.OTelSpans, s.OTelUnbuilt = nil, nil
		s.Annotations, s.EverAnnotated = nil, nil
		s.Compared, s.Comparisons, s.Adjudications = nil, nil, nil
	case events.ComparisonReviewed:
		var p events.ComparisonReviewedV1
		_ = e.Decode(&p)
		if s.Compared == nil {
			s.Compared = map[string]bool{}
		}
		s.Compared[p.FindingID+"/"+p.ReviewerID] = true
		s.Comparisons = append(s.Comparisons, p)
	case events.AnnotationAdjudicated:
		var p events.AnnotationAdjudicatedV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		if s.Adjudications == nil {
			s.Adjudications = map[string]events.AnnotationAdjudicatedV1{}
		}
		s.Adjudications[AdjudicationKey(p.StepID, p.CriterionID)] = p
	case events.TraceContributionSet:
		var p events.TraceContributionSetV1
		_ = e.Decode(&p)
		s.Contribute = p.Contribute
	case events.AnnotationAdded:
		var p events.AnnotationAddedV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		if s.Annotations == nil {
			s.Annotations = map[string]*Annotation{}
		}
		s.Annotations[p.AnnotationID] = &Annotation{ID: p.AnnotationID, StepID: p.StepID, Rating: p.Rating, Comment: p.Comment, AuthorID: p.AuthorID,
			CriterionID: p.CriterionID, Value: p.Value}
		if s.EverAnnotated == nil {
			s.EverAnnotated = map[string]bool{}
		}
		s.EverAnnotated[p.AnnotationID] = true
	case events.AnnotationEdited:
		var p events.AnnotationEditedV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		if a := s.Annotations[p.AnnotationID]; a != nil {
			a.Rating, a.Comment, a.LabelError, a.LabelErrorNote = p.Rating, p.Comment, p.LabelError, p.LabelErrorNote
			if a.CriterionID != "" {
				a.Value = p.Value
			}
		}
	case events.TraceTitled:
		var p events.TraceTitledV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		s.Title, s.TitleDerived, s.Generated = p.Title, false, true
	case events.AnnotationRemoved:
		var p events.AnnotationRemovedV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		delete(s.Annotations, p.AnnotationID)
	case events.OTelSpansReceived:
		var p events.OTelSpansReceivedV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		s.ID = p.TraceID
		s.ExternalID = cmp.Or(p.Conversation, p.OTelTraceID)
		s.OTelFiledIn = cmp.Or(p.FiledIn, s.OTelFiledIn)
		if s.OTelSpans == nil {
			s.OTelSpans = map[string]json.RawMessage{}
		}
		if s.OTelUnbuilt == nil && len(p.Spans) > 0 {
			s.OTelUnbuilt = map[string]bool{}
		}
		for _, sp := range p.Spans {
			s.OTelSpans[sp.SpanID] = sp.JSON
			s.OTelUnbuilt[sp.SpanID] = true
		}
	}
	return nil
}

// ErasedMessage is what an import or an export is told of a trace it
// names that was erased (State.Erased).
func ErasedMessage(traceID string) string {
	return "trace " + traceID + " was erased (deleted, past its retention, or its account erased); an erased trace is not stored again: send it under another id"
}

// ImportInput is one parsed trace with what the request said about it.
type ImportInput struct {
	TraceID          string
	Trace            domain.Trace
	Format           string
	ExplicitSourceID string
	NewID            func() string // fresh step ids; the command supplies them
	// AnnotationID gives an imported annotation (Trace.Annotations) its id
	// from its key, the same for every import of it.
	AnnotationID func(key string) string
	// AuthorID is the importing user, who answers for imported annotations
	// (their author name says the source).
	AuthorID string
}

// Decision is the event an import produces (Type, Payload), or none for a
// no-op, plus the annotation removals it implies.
type Decision struct {
	Type     string
	Payload  any
	NoOp     bool
	Removals []events.AnnotationRemovedV1
	// Annotations are the source's reviews not imported before, added
	// after the content event (a NoOp decision may still carry some).
	Annotations []events.AnnotationAddedV1
}

// DecideImport decides what importing in means for the stored trace s:
//   - nothing stored (or deleted): trace.imported at revision s.Revision+1;
//   - a session snapshot (Claude Code, Codex) that extends the stored steps:
//     trace.revised in "appended" mode, keeping every existing step id;
//     one that is equal to or a prefix of the stored steps: a no-op;
//     one that diverges: a SyncError, the stored trace untouched;
//   - anything else that says the same (steps, title, metadata, spans): a
//     no-op, so re-importing a file changes nothing and keeps every review;
//   - the same steps followed by more: trace.revised in "appended" mode;
//   - a real change: trace.revised in "replaced" mode where every step
//     unchanged in content and position keeps its id (and annotations), and
//     only the annotations on the other stored steps are removed.
//
// Files and live OTLP traces (re-sent whole by retrying exporters, rebuilt
// as spans arrive) decide alike.
func DecideImport(s State, in ImportInput) (Decision, error) {
	d, err := decideContent(s, in)
	if err != nil || len(in.Trace.Annotations) == 0 || in.AnnotationID == nil {
		return d, err
	}
	revision, ever := s.Revision, s.EverAnnotated
	if !d.NoOp {
		revision = s.Revision + 1
	}
	if !s.Exists {
		ever = nil // a deleted trace imported again starts its review afresh
	}
	for _, a := range in.Trace.Annotations {
		id := in.AnnotationID(a.Key)
		if ever[id] {
			continue
		}
		comment := a.Comment
		d.Annotations = append(d.Annotations, events.AnnotationAddedV1{AnnotationID: id, TraceID: in.TraceID,
			Rating: a.Rating, Comment: &comment, AuthorID: in.AuthorID, AuthorName: a.Author, TraceRevision: revision})
	}
	return d, nil
}

// decideContent decides the content event of an import (see DecideImport).
func decideContent(s State, in ImportInput) (Decision, error) {
	t := in.Trace
	title, derived := t.Title, false
	if title == "" {
		title, derived = domain.DefaultTitle(t.Steps), true
	}
	sourceID := cmp.Or(in.ExplicitSourceID, s.SourceID) // an earlier explicit id survives an upsert without one
	meta := maps.Clone(t.Metadata)
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
		for i := range min(len(s.Steps), len(t.Steps)) {
			if !sameStep(s.Steps[i].Step, t.Steps[i]) {
				return Decision{}, &domain.SyncError{Message: "trace_sync_error: the session snapshot diverges from the stored trace at step " +
					strconv.Itoa(i) + "; the stored trace and its review are kept"}
			}
		}
		if len(t.Steps) <= len(s.Steps) {
			return Decision{NoOp: true}, nil
		}
		if derived && s.Generated {
			// A growing session keeps the title the fast model wrote.
			title, derived = s.Title, false
		}
		return appended(s, in, title, derived, sourceID, meta), nil
	}

	ids, removed := keptStepIDs(s.Steps, t.Steps, in.NewID)
	if len(removed) == 0 && sameStepMetadata(s.Steps, t.Steps) {
		if derived && s.Generated {
			// A re-sent or growing trace keeps the title the fast model wrote.
			title, derived = s.Title, false
		}
		if len(t.Steps) == len(s.Steps) && title == s.Title && equalJSON(meta, s.Metadata) && sameSpans(t.Spans, s.Spans) {
			return Decision{NoOp: true}, nil
		}
		// New steps at the end, or the same steps with a changed span tree,
		// title or metadata (a root span arriving last): append, keeping ids.
		return appended(s, in, title, derived, sourceID, meta), nil
	}

	// A real change: the whole step list again, each step that says what it
	// said at the same position keeping its id (so its annotations), the
	// others new; only annotations on steps that are gone are removed.
	out := make([]events.StepRecord, len(t.Steps))
	for i, st := range t.Steps {
		out[i] = events.StepRecord{ID: ids[i], Index: i, Step: st}
	}
	return Decision{Type: events.TraceRevised, Payload: events.TraceRevisedV1{
		TraceID: in.TraceID, Revision: s.Revision + 1, Mode: events.RevisionReplaced,
		Title: title, SourceFormat: in.Format, SourceID: sourceID, Metadata: meta,
		Steps: out, RemovedStepIDs: removed, Spans: t.Spans, TitleDerived: derived,
	}, Removals: s.stepAnnotationRemovals(in.TraceID, removed)}, nil
}

// appended is the revision that adds the rebuilt trace's steps past the
// stored ones and records its span tree as a delta where one says it.
func appended(s State, in ImportInput, title string, derived bool, sourceID string, meta map[string]any) Decision {
	t := in.Trace
	spans, delta, order := spanChanges(s.Spans, t.Spans)
	return Decision{Type: events.TraceRevised, Payload: events.TraceRevisedV1{
		TraceID: in.TraceID, Revision: s.Revision + 1, Mode: events.RevisionAppended,
		Title: title, SourceFormat: in.Format, SourceID: sourceID, Metadata: meta,
		Steps: records(t.Steps[len(s.Steps):], len(s.Steps), in.NewID), Spans: spans, SpansDelta: delta, SpanOrder: order, TitleDerived: derived,
	}}
}

// keptStepIDs gives each of next's steps its id: the stored step's at the
// same position when that step says the same thing (role, content, tool
// call), a fresh one otherwise. removed lists the stored ids not kept, in
// order. A step's position is part of what it is: an inserted step shifts
// the ones after it, and they are new steps to review (pairs render a step
// with everything before it).
func keptStepIDs(stored []events.StepRecord, next []domain.Step, newID func() string) (ids, removed []string) {
	ids = make([]string, len(next))
	for i, st := range next {
		if i < len(stored) && sameStep(stored[i].Step, st) {
			ids[i] = stored[i].ID
		} else {
			ids[i] = newID()
		}
	}
	for i, st := range stored {
		if i >= len(next) || ids[i] != st.ID {
			removed = append(removed, st.ID)
		}
	}
	return ids, removed
}

// sameStepMetadata reports whether the stored steps' metadata (timestamps,
// model, usage) is what next says at the same positions: a re-import that
// only changes it is a revision that keeps every id, not a no-op.
func sameStepMetadata(stored []events.StepRecord, next []domain.Step) bool {
	for i := range stored {
		if i >= len(next) || !equalJSON(stored[i].Metadata, next[i].Metadata) {
			return false
		}
	}
	return true
}

// equalJSON compares two values by what they say as JSON: a stored value has
// been through jsonb (keys reordered, whitespace dropped, numbers kept as
// json.Number) while a parsed one has not.
func equalJSON(a, b any) bool {
	ca, errA := canonical(a)
	cb, errB := canonical(b)
	return errA == nil && errB == nil && reflect.DeepEqual(ca, cb)
}

// SameSpanJSON reports whether a received span's OTLP/JSON says what its
// stored copy (as read back from the log) says.
func SameSpanJSON(stored, received json.RawMessage) bool {
	return equalJSON(stored, received)
}

func canonical(v any) (any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var out any
	err = dec.Decode(&out)
	if m, ok := out.(map[string]any); ok && len(m) == 0 {
		out = nil // an empty object and an absent one read the same
	}
	if l, ok := out.([]any); ok && len(l) == 0 {
		out = nil
	}
	return out, err
}

// stepAnnotationRemovals removes the step-level annotations on the removed
// steps. Trace-level annotations and those on kept steps survive.
func (s State) stepAnnotationRemovals(traceID string, removedSteps []string) []events.AnnotationRemovedV1 {
	var out []events.AnnotationRemovedV1
	for _, id := range slices.Sorted(maps.Keys(s.Annotations)) {
		if step := s.Annotations[id].StepID; step != "" && slices.Contains(removedSteps, step) {
			out = append(out, events.AnnotationRemovedV1{AnnotationID: id, TraceID: traceID, Reason: events.RemovedStepRemoved})
		}
	}
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
	return bytes.Equal(domain.CanonicalToolInput(a.ToolInput), domain.CanonicalToolInput(b.ToolInput))
}

// Fold rebuilds a trace's state from its stream (id is the trace's, for a
// stream that may be empty).
func Fold(id string, stream []events.Envelope) (State, error) {
	s := State{ID: id}
	for _, e := range stream {
		if err := s.Apply(e); err != nil {
			return State{}, err
		}
	}
	return s, nil
}
