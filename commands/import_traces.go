package commands

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/formats"
	"github.com/criticml/critic/domain/traces"
)

// traceNamespace seeds trace ids derived from (owner, external id): the same
// external id always maps to the same stream, so concurrent re-imports meet
// at the event store's version check instead of creating duplicates.
var traceNamespace = uuid.MustParse("5b0c7e0e-3f43-4c55-9f0e-6f8a3c1d2a10")

// TraceIDFor returns the trace id an external id maps to for an owner.
func TraceIDFor(ownerID, externalID string) string {
	return uuid.NewSHA1(traceNamespace, []byte(ownerID+"\x00"+externalID)).String()
}

// ImportTracesInput is what POST /traces/import asks.
type ImportTracesInput struct {
	Format   string
	Data     []byte
	SourceID string // optional; overrides recorded source ids for every trace
	// Contribute, when set, is every imported trace's consent to train the
	// shared evaluator (trace.contribution_set after its import event);
	// nil leaves each trace's consent as it was (new traces: not opted in).
	Contribute *bool
}

// ImportResult is the response of an import.
type ImportResult struct {
	Result
	Format   string
	TraceIDs []string
	// Unchanged counts the TraceIDs the payload left as they were (the same
	// content again, or an older session snapshot): clients such as
	// `critic import` report them apart from what was imported.
	Unchanged int
	// AnnotationsRemoved counts the step annotations the revisions removed
	// because their steps changed (kept steps keep theirs): what a re-import
	// cost the review, said in the answer rather than discovered later.
	AnnotationsRemoved int
	// Erased are the ids of the payload's traces that were erased before
	// (traces.State.Erased): left out, not in TraceIDs, the rest imported.
	Erased []string
}

// ImportTraces parses the whole payload first (all traces or none), then
// appends one event per trace that changed, in one transaction.
type ImportTraces struct {
	Actor Actor
	Input ImportTracesInput
}

// ImportTracesHandler runs ImportTraces.
type ImportTracesHandler struct{ *Streams }

func (c ImportTracesHandler) Handle(ctx context.Context, cmd ImportTraces) (ImportResult, error) {
	in := cmd.Input
	if in.SourceID != "" && utf8.RuneCountInString(in.SourceID) > 200 {
		return ImportResult{}, domain.InvalidField("source_id", "source_id must be 1–200 characters")
	}
	if err := domain.CheckText("source_id", in.SourceID, domain.MaxIDBytes); err != nil {
		return ImportResult{}, err
	}
	if err := domain.CheckRawText("data", in.Data); err != nil {
		return ImportResult{}, err
	}
	adapter, err := formats.Lookup(in.Format)
	if err != nil {
		return ImportResult{}, err
	}
	format := adapter.Name()
	if format == "auto" {
		if adapter, err = formats.DetectFormat(in.Data); err != nil {
			return ImportResult{}, err
		}
		format = adapter.Name()
	}
	parsed, err := adapter.Parse(in.Data)
	if err != nil {
		return ImportResult{}, err
	}
	var plan importPlan
	r, err := retryContended(ctx, func() (Result, error) {
		plan, err = c.decideImports(ctx, cmd.Actor, parsed, format, in.SourceID, in.Contribute)
		if err != nil {
			return Result{}, err
		}
		return c.append(ctx, cmd.Actor, plan.expected, append(plan.evs, plan.consent...))
	})
	if err != nil {
		return ImportResult{}, err
	}
	// A consent change alone leaves the trace's content unchanged.
	return ImportResult{Result: r, Format: format, TraceIDs: plan.ids, Unchanged: countUnchanged(plan.ids, plan.evs),
		AnnotationsRemoved: countRemovals(plan.evs), Erased: plan.erased}, nil
}

// importPlan is what an import decided: the traces it names (ids, in
// payload order, each once), their events and consent changes, the
// versions they were decided on, and the traces it left out because they
// were erased.
type importPlan struct {
	ids, erased  []string
	evs, consent []events.New
	expected     map[string]int64
}

// countUnchanged counts the trace ids no decided event touches.
func countUnchanged(ids []string, evs []events.New) int {
	touched := make(map[string]bool, len(evs))
	for _, e := range evs {
		touched[e.Stream] = true
	}
	n := 0
	for _, id := range ids {
		if !touched[events.TraceStream(id)] {
			n++
		}
	}
	return n
}

// contentKey is the identity of a trace that came without an id: what it
// says (title, metadata, steps, spans). The same file imported again meets
// its earlier import and is unchanged instead of a duplicate; any other
// content is another trace. The NUL prefix keeps it apart from every
// external id (outside text never holds U+0000).
func contentKey(t domain.Trace) string {
	raw, err := json.Marshal(t)
	if err != nil {
		// Parsed JSON always marshals; an impossible failure must not merge traces.
		return "\x00content:" + newID()
	}
	sum := sha256.Sum256(raw)
	return "\x00content:" + hex.EncodeToString(sum[:])
}

// countRemovals counts the annotation removals among the decided events.
func countRemovals(evs []events.New) int {
	n := 0
	for _, e := range evs {
		if e.Type == events.AnnotationRemoved {
			n++
		}
	}
	return n
}

func (c *Streams) decideImports(ctx context.Context, actor Actor, parsed []domain.Trace, format, sourceID string, contribute *bool) (importPlan, error) {
	ids := make([]string, len(parsed))
	keyed := make([]string, len(parsed))
	for i, t := range parsed {
		key := t.ExternalID
		if key == "" {
			key = contentKey(t)
		}
		ids[i] = TraceIDFor(actor.UserID, key)
		keyed[i] = events.TraceStream(ids[i])
	}
	loaded, err := c.store.LoadStreams(ctx, keyed)
	if err != nil {
		return importPlan{}, err
	}
	occurrences := map[string]int{}
	for _, id := range ids {
		occurrences[id]++
	}
	states := map[string]*traces.State{}
	expected := map[string]int64{}
	var evs []events.New
	var out, erased []string
	seen := map[string]bool{}
	for i, t := range parsed {
		stream := events.TraceStream(ids[i])
		st := states[stream]
		if st == nil {
			folded, err := traces.Fold(ids[i], loaded[stream])
			if err != nil {
				return importPlan{}, err
			}
			st = &folded
			if st.Version > 0 && st.OwnerID != actor.UserID {
				// Cannot happen with owner-derived ids; refuse rather than cross owners.
				return importPlan{}, domain.NotFound("trace", ids[i])
			}
			states[stream] = st
			expected[stream] = st.Version
		}
		traceID := ids[i]
		if st.Erased {
			if !seen[traceID] {
				seen[traceID] = true
				erased = append(erased, traceID)
			}
			continue
		}
		d, err := traces.DecideImport(*st, traces.ImportInput{TraceID: traceID, Trace: t, Format: format, ExplicitSourceID: sourceID, NewID: newID,
			AuthorID: actor.Member(), AnnotationID: func(key string) string { return TraceIDFor(traceID, "\x00annotation:"+key) }})
		if err != nil {
			return importPlan{}, err
		}
		if !seen[ids[i]] {
			seen[ids[i]] = true
			out = append(out, ids[i])
		}
		if d.NoOp && len(d.Annotations) == 0 {
			continue
		}
		var decided []events.New
		if !d.NoOp {
			decided = append(decided, events.New{Type: d.Type, Payload: d.Payload})
		}
		for _, rm := range d.Removals {
			decided = append(decided, events.New{Type: events.AnnotationRemoved, Payload: rm})
		}
		for _, a := range d.Annotations {
			decided = append(decided, events.New{Type: events.AnnotationAdded, Payload: a})
		}
		// A later line of the same payload that touches this trace again
		// must decide on the state these events produce.
		occurrences[ids[i]]--
		for _, e := range decided {
			e.ID, e.Stream, e.OwnerID = newID(), stream, actor.UserID
			evs = append(evs, e)
			if occurrences[ids[i]] > 0 {
				if err := apply(st, actor.UserID, e.Type, e.Payload); err != nil {
					return importPlan{}, err
				}
			}
		}
	}
	// Consent follows the content events of the same transaction, once per
	// trace; a deleted trace re-imported starts opted out (State resets it).
	var consent []events.New
	if contribute != nil {
		for _, id := range out {
			st := states[events.TraceStream(id)]
			if ev, changed := traces.DecideContribution(*st, *contribute, events.ContributionViaImport); changed {
				ev.TraceID = id
				ev.Revision = revisionAfter(st, id, evs)
				consent = append(consent, events.New{ID: newID(), Stream: events.TraceStream(id), OwnerID: actor.UserID,
					Type: events.TraceContributionSet, Payload: ev})
			}
		}
	}
	return importPlan{ids: out, erased: erased, evs: evs, consent: consent, expected: expected}, nil
}

// revisionAfter is the revision a trace has once evs are applied: the last
// import or revision event decided for it, else its stored revision.
func revisionAfter(st *traces.State, id string, evs []events.New) int {
	rev := st.Revision
	for _, e := range evs {
		switch p := e.Payload.(type) {
		case events.TraceImportedV1:
			if p.TraceID == id {
				rev = p.Revision
			}
		case events.TraceRevisedV1:
			if p.TraceID == id {
				rev = p.Revision
			}
		}
	}
	return rev
}

// apply folds a decided (not yet stored) event into an in-memory state; it
// was encoded here a moment ago, so it decodes.
func apply(st *traces.State, owner, typ string, payload any) error {
	raw, err := json.Marshal(payload)
	if err != nil {
		return err
	}
	return st.Apply(events.Envelope{Type: typ, Version: st.Version + 1, OwnerID: owner, Payload: raw})
}
