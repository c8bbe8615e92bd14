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
func (c *Commands) RequestAssessment(ctx context.Context, actor Actor, traceID, kind string, items []events.AssessmentItem) (Result, error) {
	if len(items) == 0 {
		return Result{}, nil
	}
	version, lease := sections.SectionAssessmentVersion, sections.SectionLeaseSeconds
	if kind == events.AssessmentCompletion {
		version, lease = sections.CompletionVersion, sections.CompletionLeaseSeconds
	} else if kind != events.AssessmentSections {
		return Result{}, domain.Invalid("unknown assessment kind %q", kind)
	}
	return c.onTrace(ctx, actor, traceID, func(s traces.State) (string, any, error) {
		return events.TraceAssessmentRequested, events.TraceAssessmentRequestedV1{TraceID: traceID,
			Revision: s.Revision, Kind: kind, Version: version, Items: items, LeaseSeconds: lease}, nil
	})
}
