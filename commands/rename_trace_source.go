package commands

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
)

// RenameTraceSource upserts the caller's alias for a source id (it may name
// traces that do not exist yet: aliases apply to future traces too).
type RenameTraceSource struct {
	Actor    Actor
	SourceID string
	Name     string
}

// RenameTraceSourceHandler runs RenameTraceSource.
type RenameTraceSourceHandler struct{ *Streams }

func (c RenameTraceSourceHandler) Handle(ctx context.Context, cmd RenameTraceSource) (Result, error) {
	if err := domain.CheckText("source_id", cmd.SourceID, domain.MaxIDBytes); err != nil {
		return Result{}, err
	}
	if err := domain.CheckText("name", cmd.Name, domain.MaxNameBytes); err != nil {
		return Result{}, err
	}
	if n := utf8.RuneCountInString(cmd.SourceID); n < 1 || n > 200 {
		return Result{}, domain.InvalidField("source_id", "source_id must be 1–200 characters")
	}
	cmd.Name = strings.TrimSpace(cmd.Name)
	if n := utf8.RuneCountInString(cmd.Name); n < 1 || n > 120 {
		return Result{}, domain.InvalidField("name", "name must be 1–120 characters")
	}
	return c.append(ctx, cmd.Actor, nil, []events.New{{ID: newID(), Stream: events.TraceSourceStream(cmd.Actor.UserID, cmd.SourceID),
		OwnerID: cmd.Actor.UserID, Type: events.TraceSourceRenamed, Payload: events.TraceSourceRenamedV1{SourceID: cmd.SourceID, Name: cmd.Name}}})
}
