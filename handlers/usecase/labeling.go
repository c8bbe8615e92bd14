package usecase

import (
	"context"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain/assessment"
	"github.com/criticml/critic/projections/readmodel"
)

// RetryLabeling is POST /traces/{id}/labeling/retry: the owner asks for
// the trace's missing step labels again (after a failed run). It records
// the request (trace.labeling_requested), which queues a label job; the
// answer is the trace's labeling status once the read model has the
// request. Recorded labels are kept: only chunks without one are sent.
func (b Backend) RetryLabeling(ctx context.Context, caller *readmodel.Caller, traceID string) (*assessment.LabelingStatus, error) {
	res, err := b.Cmds.RetryLabeling.Handle(ctx, commands.RetryLabeling{Actor: Actor(caller), TraceID: traceID})
	return traceAfter(ctx, b, caller, traceID, res, err, labelingOf)
}

// RelabelTrace is POST /traces/{id}/labeling/rescore, the viewer's rescore
// control: every chunk is labeled anew (and so scored anew); the recorded
// labels stay until the new ones supersede them.
func (b Backend) RelabelTrace(ctx context.Context, caller *readmodel.Caller, traceID string) (*assessment.LabelingStatus, error) {
	res, err := b.Cmds.RelabelTrace.Handle(ctx, commands.RelabelTrace{Actor: Actor(caller), TraceID: traceID})
	return traceAfter(ctx, b, caller, traceID, res, err, labelingOf)
}

// labelingOf is a trace's labeling status, a labeling request's answer.
func labelingOf(d *readmodel.TraceDetail) *assessment.LabelingStatus { return d.Labeling }

// traceAfter answers a request about a trace (err: the command's error)
// with part of the trace, picked once the read model has the request.
func traceAfter[T any](ctx context.Context, b Backend, caller *readmodel.Caller, traceID string, res commands.Result, err error, pick func(*readmodel.TraceDetail) T) (T, error) {
	return settled(ctx, b, res, err, func() (T, error) {
		d, err := b.Queries.GetTrace(ctx, caller.UserID, traceID)
		if err != nil {
			var zero T
			return zero, err
		}
		return pick(d), nil
	})
}
