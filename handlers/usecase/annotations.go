package usecase

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/domain/traces"
	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/projections/readmodel"
)

// AddAnnotation adds the caller's annotation (authored by the key's member,
// under their name) and returns it once readable.
func (b Backend) AddAnnotation(ctx context.Context, caller *readmodel.Caller, in commands.AddAnnotationInput) (*readmodel.Annotation, error) {
	in.AuthorName = cmp.Or(caller.MemberName, caller.Name)
	res, err := b.Cmds.AddAnnotation.Handle(ctx, commands.AddAnnotation{Actor: Actor(caller), Input: in})
	return b.annotationAfter(ctx, caller, res.Result, err, res.AnnotationID)
}

// EditAnnotation applies a PATCH (in.AnnotationID names the annotation) to
// one of the caller's annotations and returns it once readable. Another
// owner's annotation is not found.
func (b Backend) EditAnnotation(ctx context.Context, caller *readmodel.Caller, in traces.EditAnnotationInput) (*readmodel.Annotation, error) {
	traceID, err := b.Queries.AnnotationTrace(ctx, caller.UserID, in.AnnotationID)
	if err != nil {
		return nil, err
	}
	res, err := b.Cmds.EditAnnotation.Handle(ctx, commands.EditAnnotation{Actor: Actor(caller), TraceID: traceID, Edit: in})
	return b.annotationAfter(ctx, caller, res, err, in.AnnotationID)
}

// RemoveAnnotation removes one of the caller's annotations and returns once
// it is gone from the read model.
func (b Backend) RemoveAnnotation(ctx context.Context, caller *readmodel.Caller, id string) error {
	traceID, err := b.Queries.AnnotationTrace(ctx, caller.UserID, id)
	if err != nil {
		return err
	}
	res, err := b.Cmds.RemoveAnnotation.Handle(ctx, commands.RemoveAnnotation{Actor: Actor(caller), TraceID: traceID, AnnotationID: id})
	return b.applied(ctx, res, err)
}

// annotationAfter answers a write of annotation id (err: the command's
// error) with the annotation once readable.
func (b Backend) annotationAfter(ctx context.Context, caller *readmodel.Caller, res commands.Result, err error, id string) (*readmodel.Annotation, error) {
	return settled(ctx, b, res, err, func() (*readmodel.Annotation, error) { return b.Queries.GetAnnotation(ctx, caller.UserID, id) })
}

// AnnotationPatchJSON decodes REST's PATCH /annotations/{id} body: a field
// that is present is changed (null clears it), a field that is absent is
// kept. A field of the wrong type or an unknown field is a validation error
// naming it (the first unknown one in name order).
func AnnotationPatchJSON(id string, raw map[string]json.RawMessage) (traces.EditAnnotationInput, error) {
	in := traces.EditAnnotationInput{AnnotationID: id}
	var unknown []string
	for k, v := range raw {
		var err error
		switch k {
		case "rating":
			err = setOptional(v, &in.Rating)
		case "comment":
			err = setOptional(v, &in.Comment)
		case "label_error":
			err = setOptional(v, &in.LabelError)
		case "label_error_note":
			err = setOptional(v, &in.LabelErrorNote)
		case "value":
			err = setOptional(v, &in.Value)
		default:
			unknown = append(unknown, k)
			continue
		}
		if err != nil {
			return in, domain.InvalidField(k, k+" has the wrong type")
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return in, &domain.ValidationError{Code: "unknown_field", Field: unknown[0], Message: "unknown field " + strings.Join(unknown, ", ")}
	}
	return in, nil
}

func setOptional[T any](raw json.RawMessage, dst *traces.Optional[T]) error {
	dst.Set = true
	if string(raw) == "null" {
		return nil
	}
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		return err
	}
	dst.Value = &v
	return nil
}

// RenameTraceSource sets the caller's display name for a source id and
// returns once the read model shows it. Both are required (nil = absent);
// their lengths are the command's to check. It is REST's
// PUT /trace-sources (handlers/rest/sources.go, which does the same steps
// and can call this).
func (b Backend) RenameTraceSource(ctx context.Context, caller *readmodel.Caller, sourceID, name *string) error {
	if sourceID == nil || name == nil {
		return &domain.ValidationError{Code: "invalid_request", Message: "source_id and name are required"}
	}
	res, err := b.Cmds.RenameTraceSource.Handle(ctx, commands.RenameTraceSource{Actor: Actor(caller), SourceID: *sourceID, Name: *name})
	return b.applied(ctx, res, err)
}

// PairsBy returns the exact preference pairs training would build from all
// of the caller's traces, at most maxPairs of them (nil: the training
// default; below 1: a validation error), from one member's ratings alone
// (the pairs export's ?member=, issue 36); member "" is every member's.
func (b Backend) PairsBy(ctx context.Context, owner, member string, maxPairs *int) ([]domain.Pair, error) {
	n := domain.DefaultMaxPairs
	if maxPairs != nil {
		if *maxPairs < 1 {
			return nil, InvalidMaxPairs()
		}
		n = *maxPairs
	}
	traces, ratings, err := b.Queries.PairInputsBy(ctx, owner, member, nil)
	if err != nil {
		return nil, err
	}
	return domain.BuildPairs(traces, ratings, n), nil
}

// ModelPairs returns the training pairs of one of the owner's models
// exactly as its stored dataset holds them, in the dataset's order: what
// that model trained (or trains) on, not a rebuild from today's annotations.
func (b Backend) ModelPairs(ctx context.Context, blobs blob.Store, owner, modelID string) ([]domain.Pair, error) {
	key, err := b.Queries.DatasetKey(ctx, owner, modelID)
	if err != nil {
		return nil, err
	}
	if blobs == nil {
		return nil, errors.New("usecase: no blob store to read the model's dataset")
	}
	raw, err := blobs.Get(ctx, key)
	if errors.Is(err, blob.ErrNotFound) {
		// Deleting a trace deletes the datasets that quote it (issue 37).
		if n, qerr := b.Queries.ErasedTracesOf(ctx, modelID); qerr == nil && n > 0 {
			return nil, &domain.ConflictError{Code: "dataset_erased", Message: fmt.Sprintf(
				"the dataset of reward model %s was deleted when %d of its traces were erased; export the pairs without reward_model_id", modelID, n)}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("read the dataset of reward model %s: %w", modelID, err)
	}
	var ds rewardmodels.Dataset
	if err := json.Unmarshal(raw, &ds); err != nil {
		return nil, fmt.Errorf("decode the dataset of reward model %s: %w", modelID, err)
	}
	pairs := make([]domain.Pair, len(ds.Pairs))
	for i, p := range ds.Pairs {
		pairs[i] = domain.Pair{Chosen: p.Chosen, Rejected: p.Rejected, TraceIDs: p.TraceIDs, Granularity: p.Granularity, AnnotationIDs: p.AnnotationIDs}
		if p.ActionType != nil {
			pairs[i].ActionType = *p.ActionType
		}
	}
	return pairs, nil
}

// InvalidMaxPairs is the error of a pairs export's max_pairs that is not a
// positive integer.
func InvalidMaxPairs() error {
	return domain.InvalidField("max_pairs", "max_pairs must be a positive integer")
}
