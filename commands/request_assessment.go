package commands

import (
	"context"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/sections"
	"github.com/criticml/critic/domain/traces"
)

// RequestAssessment records that the owner asked for section summaries or
// a completion estimate the cache does not hold (trace.assessment_requested):
// the dispatch projection turns it into a job for the worker tier, which
// calls the model — never the request handler. Items carry their cache keys;
// the lease keeps concurrent requests for the same keys from generating twice.
type RequestAssessment struct {
	Actor   Actor
	TraceID string
	Kind    string
	Items   []events.AssessmentItem
}

// RequestAssessmentHandler runs RequestAssessment.
type RequestAssessmentHandler struct{ *Streams }

func (c RequestAssessmentHandler) Handle(ctx context.Context, cmd RequestAssessment) (Result, error) {
	if len(cmd.Items) == 0 {
		return Result{}, nil
	}
	version, lease := sections.SectionAssessmentVersion, sections.SectionLeaseSeconds
	if cmd.Kind == events.AssessmentCompletion {
		version, lease = sections.CompletionVersion, sections.CompletionLeaseSeconds
	} else if cmd.Kind != events.AssessmentSections {
		return Result{}, domain.Invalid("unknown assessment kind %q", cmd.Kind)
	}
	return c.onTrace(ctx, cmd.Actor, cmd.TraceID, func(s traces.State) (string, any, error) {
		return events.TraceAssessmentRequested, events.TraceAssessmentRequestedV1{TraceID: cmd.TraceID,
			Revision: s.Revision, Kind: cmd.Kind, Version: version, Items: cmd.Items, LeaseSeconds: lease}, nil
	})
}
