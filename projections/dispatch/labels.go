package dispatch

import (
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
)

// WithLabeler turns step-label jobs on (the deployment has a step-label
// model). Every import and revision — first import, re-import, session
// sync, OTLP rebuild — and every labeling retry queues the trace; the
// worker service answers "not needed" for revisions without an agent
// response, with imported labels, or with nothing new to label, so a job
// that has nothing to do costs no model call.
func (d *Dispatcher) WithLabeler(on bool) *Dispatcher {
	d.labeler = on
	return d
}

// labelJob is the label job an event asks for, if any.
func (d *Dispatcher) labelJob(e events.Envelope) (jobs.LabelJob, bool) {
	if !d.labeler {
		return jobs.LabelJob{}, false
	}
	var p struct {
		TraceID  string `json:"trace_id"`
		Revision int    `json:"revision"`
	}
	switch e.Type {
	case events.TraceImported, events.TraceRevised, events.TraceLabelingRequested:
		if e.Decode(&p) != nil || p.TraceID == "" {
			return jobs.LabelJob{}, false
		}
		return jobs.LabelJob{TraceID: p.TraceID, Revision: p.Revision, OwnerID: e.OwnerID}, true
	}
	return jobs.LabelJob{}, false
}

// WithAssessments turns assessment jobs on (the deployment has a fast
// model): every trace.assessment_requested becomes a job for the worker
// tier, which calls the model; the request handler never does.
func (d *Dispatcher) WithAssessments(on bool) *Dispatcher {
	d.assess = on
	return d
}

func (d *Dispatcher) assessJob(e events.Envelope) (jobs.AssessJob, bool) {
	if !d.assess || e.Type != events.TraceAssessmentRequested {
		return jobs.AssessJob{}, false
	}
	var p events.TraceAssessmentRequestedV1
	if e.Decode(&p) != nil || p.TraceID == "" || len(p.Items) == 0 {
		return jobs.AssessJob{}, false
	}
	return jobs.AssessJob{TraceID: p.TraceID, OwnerID: e.OwnerID, Kind: p.Kind, Items: p.Items}, true
}
