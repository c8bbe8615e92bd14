package dispatch

import (
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
)

// TitleTopic carries title jobs (domain/jobs): a trace imported without a
// title gets one from the fast model in the worker tier, asynchronously.
const TitleTopic = jobs.TopicTitle

// TitleJob asks a worker to title one revision of a trace (domain/jobs).
type TitleJob = jobs.TitleJob

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
