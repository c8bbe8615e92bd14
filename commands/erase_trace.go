package commands

import (
	"context"
	"fmt"
	"time"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/traces"
)

// Erasure kinds: the label of critic_traces_erased_total{reason} each path
// that erases a trace passes to eraseTrace.
const (
	ErasedDeleted   = "deleted"   // DELETE /traces/{id}
	ErasedRetention = "retention" // the account's retention period
	ErasedAccount   = "account"   // the whole account erased
)

// WithErasureCounter tells the commands whom to tell of every trace they
// erase, with its kind (ErasedDeleted, ErasedRetention, ErasedAccount): the
// critic_traces_erased_total metric.
func WithErasureCounter(count func(kind string)) Option {
	return func(c *config) { c.erased = count }
}

// eraseTrace is the one way a trace is erased, whichever path asks (a
// deletion, retention, account erasure): trace.deleted and trace.erased
// (by, reason) at the stream's version, then the key, blobs and datasets,
// then the erasure counter. keep, when given, is asked with the loaded
// trace: true keeps it (nothing is appended, an empty Result), which is how
// retention erases a trace only while its stream still says it is old.
func (c *Streams) eraseTrace(ctx context.Context, actor Actor, traceID, kind, by, reason string, keep func(traces.State) bool) (Result, error) {
	r, err := retryOnConflict(func() (Result, error) {
		st, err := c.ownedTrace(ctx, actor, traceID)
		if err != nil {
			return Result{}, err
		}
		if keep != nil && keep(st) {
			return Result{}, nil
		}
		stream := events.TraceStream(st.ID)
		return c.append(ctx, actor, map[string]int64{stream: st.Version}, []events.New{
			{ID: newID(), Stream: stream, OwnerID: actor.UserID, Type: events.TraceDeleted, Payload: events.TraceDeletedV1{TraceID: traceID}},
			{ID: newID(), Stream: stream, OwnerID: actor.UserID, Type: events.TraceErased, Payload: events.TraceErasedV1{
				TraceID: traceID, By: by, Reason: reason, At: time.Now().UTC().Format(time.RFC3339)}},
		})
	})
	if err != nil || r.LastEventID == "" {
		return r, err
	}
	if err := c.store.EraseStream(ctx, events.TraceStream(traceID)); err != nil {
		return r, err
	}
	c.forgetLive(events.TraceStream(traceID))
	if err := c.eraseDatasets(ctx, actor.UserID, traceID); err != nil {
		return r, err
	}
	if err := c.forgetCachedAnswers(ctx, traceID); err != nil {
		return r, err
	}
	if c.erased != nil {
		c.erased(kind)
	}
	return r, nil
}

// forgetCachedAnswers drops the Idempotency-Key answers the API stored
// (handlers/idempotency, table idempotency_keys) that name the trace: a
// request on its path (a comment, an annotation, a score) or an answer
// whose body holds its id (an import). Such an answer can quote the
// trace's content in clear for up to the key's lifetime. Exact and cheap:
// trace ids are UUIDs, and the table holds only the last day's keys. Any
// account's rows go, since a team member's requests on the trace are
// stored under the member. A retry of such a request after the erasure is
// served afresh (and finds the trace gone).
//
// A DELETE on the trace's path is kept: that is the erasure itself
// (DELETE /traces/{id}, the only DELETE route naming a trace), whose record
// is still in flight here and whose answer is a 204 (or an error naming at
// most the id), none of the trace's content. Forgetting it would make a
// retry of the DELETE with its key (its first answer lost) run again and
// answer 404. Not "keep the rows without a body": every in-flight record
// has none, and a POST on the trace still running would then store an
// answer quoting the trace after the erasure.
func (c *Streams) forgetCachedAnswers(ctx context.Context, traceID string) error {
	if _, err := c.store.Pool().Exec(ctx, `DELETE FROM idempotency_keys
		WHERE (strpos(path, $1) > 0 OR position(convert_to($1, 'UTF8') in body) > 0) AND NOT (method = 'DELETE' AND strpos(path, $1) > 0)`, traceID); err != nil {
		return fmt.Errorf("erase trace %s: forget cached idempotent answers: %w", traceID, err)
	}
	return nil
}
