package dispatch

import (
	"github.com/criticml/critic/domain/events"
)

// TitleTopic carries title jobs: a trace imported without a title gets one
// from the fast model in the worker tier, asynchronously; until then, and
// on deployments without a fast model, the derived title shows.
const TitleTopic = "critic.jobs.title"

// TitleJob asks a worker to title one revision of a trace.
type TitleJob struct {
	TraceID  string `json:"trace_id"`
	Revision int    `json:"revision"`
	OwnerID  string `json:"owner_id"`
}

// WithTitles turns title jobs on (the deployment has a fast model).
func (d *Dispatcher) WithTitles(on bool) *Dispatcher {
	d.titles = on
	return d
}

// titleJob is the job an import asks for, if any.
func (d *Dispatcher) titleJob(e events.Envelope) (TitleJob, bool) {
	if !d.titles {
		return TitleJob{}, false
	}
	switch e.Type {
	case events.TraceImported:
		var p events.TraceImportedV1
		if e.Decode(&p) == nil && p.TitleDerived {
			return TitleJob{TraceID: p.TraceID, Revision: p.Revision, OwnerID: e.OwnerID}, true
		}
	case events.TraceRevised:
		var p events.TraceRevisedV1
		if e.Decode(&p) == nil && p.TitleDerived {
			return TitleJob{TraceID: p.TraceID, Revision: p.Revision, OwnerID: e.OwnerID}, true
		}
	}
	return TitleJob{}, false
}
