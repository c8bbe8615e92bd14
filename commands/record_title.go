package commands

import (
	"context"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
)

// RecordTitle appends trace.titled when the revision is current and still
// has its derived title; otherwise it is a no-op (a newer import, an
// explicit title, or a duplicate job won).
type RecordTitle struct {
	WorkerID string
	TraceID  string
	Revision int
	Title    string
	Model    string
	Usage    []events.LLMUsage
}

// RecordTitleHandler runs RecordTitle.
type RecordTitleHandler struct{ *Streams }

// Handle runs the command.
func (c RecordTitleHandler) Handle(ctx context.Context, cmd RecordTitle) (Result, error) {
	// A model's answer is outside text too.
	if err := domain.CheckText("model", cmd.Model, domain.MaxNameBytes); err != nil {
		return Result{}, err
	}
	cmd.Title = domain.CleanTitle(cmd.Title)
	if err := domain.CheckText("title", cmd.Title, domain.MaxTitleBytes); err != nil {
		return Result{}, err
	}
	if cmd.Title == "" {
		return Result{}, domain.Invalid("the title is empty")
	}
	return retryOnConflict(func() (Result, error) {
		s, err := c.loadTrace(ctx, cmd.TraceID)
		if err != nil {
			return Result{}, err
		}
		if !s.Exists || s.Revision != cmd.Revision || !s.TitleDerived {
			return Result{}, nil
		}
		if cmd.Usage == nil {
			cmd.Usage = []events.LLMUsage{}
		}
		return c.appendToTrace(ctx, workerActor(cmd.WorkerID), s, events.TraceTitled, events.TraceTitledV1{TraceID: cmd.TraceID, Revision: cmd.Revision,
			Title: cmd.Title, Model: cmd.Model, PromptVersion: domain.TitlePromptVersion, Usage: cmd.Usage})
	})
}
