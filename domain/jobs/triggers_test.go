package jobs

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain/events"
)

// What an event alone asks the worker tier for, by the kinds a deployment
// runs: an import or revision with a derived title a title job, every
// import, revision and labeling retry a label job, an assessment request an
// assess job — and nothing of a kind that is off or of an event no kind
// reacts to.
func TestTriggeredBy(t *testing.T) {
	t.Parallel()
	ev := func(typ string, payload any) events.Envelope {
		raw, err := json.Marshal(payload)
		require.NoError(t, err)
		return events.Envelope{Type: typ, OwnerID: "o1", Payload: raw}
	}
	all := func(Kind) bool { return true }
	only := func(k Kind) func(Kind) bool { return func(x Kind) bool { return x == k } }

	derived := ev(events.TraceImported, events.TraceImportedV1{TraceID: "t1", Revision: 1, TitleDerived: true})
	require.Equal(t, []Triggered{
		{KindLabel, LabelJob{TraceID: "t1", Revision: 1, OwnerID: "o1"}},
		{KindTitle, TitleJob{TraceID: "t1", Revision: 1, OwnerID: "o1"}},
	}, TriggeredBy(derived, all))
	require.Equal(t, []Triggered{{KindTitle, TitleJob{TraceID: "t1", Revision: 1, OwnerID: "o1"}}}, TriggeredBy(derived, only(KindTitle)))
	require.Empty(t, TriggeredBy(derived, func(Kind) bool { return false }))

	titled := ev(events.TraceRevised, events.TraceRevisedV1{TraceID: "t1", Revision: 2, Title: "Refund"})
	require.Equal(t, []Triggered{{KindLabel, LabelJob{TraceID: "t1", Revision: 2, OwnerID: "o1"}}}, TriggeredBy(titled, all))
	retry := ev(events.TraceLabelingRequested, map[string]any{"trace_id": "t1", "revision": 2})
	require.Equal(t, []Triggered{{KindLabel, LabelJob{TraceID: "t1", Revision: 2, OwnerID: "o1"}}}, TriggeredBy(retry, all))

	items := []events.AssessmentItem{{Key: "k", EvidenceHash: "h"}}
	assess := ev(events.TraceAssessmentRequested, events.TraceAssessmentRequestedV1{TraceID: "t1", Revision: 2, Kind: "completion", Items: items})
	require.Equal(t, []Triggered{{KindAssess, AssessJob{TraceID: "t1", OwnerID: "o1", Kind: "completion", Items: items}}}, TriggeredBy(assess, all))
	require.Empty(t, TriggeredBy(ev(events.TraceAssessmentRequested, events.TraceAssessmentRequestedV1{TraceID: "t1"}), all), "no items: no job")

	require.Empty(t, TriggeredBy(ev(events.TraceDeleted, events.TraceDeletedV1{TraceID: "t1"}), all))
	require.Empty(t, TriggeredBy(events.Envelope{Type: events.TraceImported, Payload: json.RawMessage(`{"trace_id":`)}, all), "a malformed payload asks for nothing")
}
