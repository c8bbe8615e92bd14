package dispatch

import (
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
)

// WithTitles turns title jobs on (the deployment has a fast model).
func (d *Dispatcher) WithTitles(on bool) *Dispatcher {
	d.titles = on
	return d
}

// titleJob is the job an import asks for, if any: a trace imported without
// a title gets one from the fast model in the worker tier, asynchronously.
func (d *Dispatcher) titleJob(e events.Envelope) (jobs.TitleJob, bool) {
	if !d.titles {
		return jobs.TitleJob{}, false
	}
	switch e.Type {
	case events.TraceImported:
		var p events.TraceImportedV1
		if e.Decode(&p) == nil && p.TitleDerived {
			return jobs.TitleJob{TraceID: p.TraceID, Revision: p.Revision, OwnerID: e.OwnerID}, true
		}
	case events.TraceRevised:
		var p events.TraceRevisedV1
		if e.Decode(&p) == nil && p.TitleDerived {
			return jobs.TitleJob{TraceID: p.TraceID, Revision: p.Revision, OwnerID: e.OwnerID}, true
		}
	}
	return jobs.TitleJob{}, false
}
