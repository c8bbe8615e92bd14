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
func (c *Commands) RenameTraceSource(ctx context.Context, actor Actor, sourceID, name string) (Result, error) {
	if err := domain.CheckText("source_id", sourceID, domain.MaxIDBytes); err != nil {
		return Result{}, err
	}
	if err := domain.CheckText("name", name, domain.MaxNameBytes); err != nil {
		return Result{}, err
	}
	if n := utf8.RuneCountInString(sourceID); n < 1 || n > 200 {
		return Result{}, &domain.ValidationError{Code: "invalid_request", Field: "source_id", Message: "source_id must be 1–200 characters"}
	}
	name = strings.TrimSpace(name)
	if n := utf8.RuneCountInString(name); n < 1 || n > 120 {
		return Result{}, &domain.ValidationError{Code: "invalid_request", Field: "name", Message: "name must be 1–120 characters"}
	}
	return c.append(ctx, actor, nil, []events.New{{ID: newID(), Stream: events.TraceSourceStream(actor.UserID, sourceID),
		OwnerID: actor.UserID, Type: events.TraceSourceRenamed, Payload: events.TraceSourceRenamedV1{SourceID: sourceID, Name: name}}})
}
