package commands

import (
	"context"
	"errors"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
)

// MaxSkipReasonBytes bounds the reason an operator gives for a skip.
const MaxSkipReasonBytes = 2000

// SkipProjectionEvent records that the event eventID can never be applied
// (projection.event_skipped): every projection then passes over it and
// releases the owner it held behind it, and replays leave it out. It is
// the operator's way out when `critic projections retry` cannot succeed
// (an event stored before the edge refused what it holds, a bug in old
// code). Skipping an event twice is a conflict; skipping a skip is refused.
type SkipProjectionEvent struct {
	EventID string
	Reason  string
}

// SkipProjectionEventHandler runs SkipProjectionEvent.
type SkipProjectionEventHandler struct{ *Streams }

func (c SkipProjectionEventHandler) Handle(ctx context.Context, cmd SkipProjectionEvent) (Result, error) {
	if _, err := uuid.Parse(cmd.EventID); err != nil {
		return Result{}, domain.InvalidField("event_id", "is not an event id (a UUID, as `critic projections status` lists them)")
	}
	cmd.Reason = strings.TrimSpace(cmd.Reason)
	if cmd.Reason == "" {
		return Result{}, domain.InvalidField("reason", "say why the event is skipped (--reason)")
	}
	if err := domain.CheckText("reason", cmd.Reason, MaxSkipReasonBytes); err != nil {
		return Result{}, err
	}
	e, err := c.store.ReadByID(ctx, cmd.EventID)
	if errors.Is(err, pgx.ErrNoRows) {
		return Result{}, domain.NotFound("event", cmd.EventID)
	}
	if err != nil {
		return Result{}, err
	}
	if e.Type == events.ProjectionEventSkipped {
		return Result{}, domain.InvalidField("event_id", "is itself a skip; it cannot be skipped")
	}
	r, err := c.appendEvent(ctx, Actor{}, events.ProjectionSkipStream(cmd.EventID), e.OwnerID, 0, events.ProjectionEventSkipped,
		events.ProjectionEventSkippedV1{EventID: e.ID, EventType: e.Type, Seq: e.Seq, Reason: cmd.Reason})
	if _, ok := errors.AsType[*domain.VersionConflictError](err); ok {
		return Result{}, &domain.ConflictError{Code: "already_skipped", Message: "event " + cmd.EventID + " is already skipped"}
	}
	return r, err
}
