package readmodel

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/platform/pg"
)

const annotationCols = `a.id, a.trace_id, a.step_id, a.rating, a.comment, a.quote, a.label_error, a.label_error_note,
	a.author_id, a.author_name, a.created_at, a.criterion_id, a.value`

func (q *Queries) annotations(ctx context.Context, where string, args ...any) ([]Annotation, error) {
	return pg.Append(ctx, q.pool, []Annotation{}, func(r pgx.CollectableRow) (a Annotation, err error) {
		var quote, value []byte
		var rating *int16
		if err := r.Scan(&a.ID, &a.TraceID, &a.StepID, &rating, &a.Comment, &quote, &a.LabelError, &a.LabelErrorNote,
			&a.AuthorID, &a.AuthorName, &a.CreatedAt, &a.CriterionID, &value); err != nil {
			return a, err
		}
		a.Value = rawOrNull(value)
		a.MemberID = a.AuthorID
		a.Rating = ratingOf(rating)
		a.Quote = rawOrNull(quote)
		a.CreatedAt = a.CreatedAt.UTC()
		return a, nil
	}, `SELECT `+annotationCols+` FROM rm_annotations a WHERE `+where+` ORDER BY a.seq`, args...)
}

// GetAnnotation returns one of the owner's annotations.
func (q *Queries) GetAnnotation(ctx context.Context, owner, id string) (*Annotation, error) {
	if !validUUID(id) {
		return nil, domain.NotFound("annotation", id)
	}
	as, err := q.annotations(ctx, `a.id = $1 AND a.owner_id = $2`, id, owner)
	if err != nil {
		return nil, err
	}
	if len(as) == 0 {
		return nil, domain.NotFound("annotation", id)
	}
	return &as[0], nil
}

// AnnotationTrace returns the trace an owner's annotation belongs to.
func (q *Queries) AnnotationTrace(ctx context.Context, owner, id string) (string, error) {
	if !validUUID(id) {
		return "", domain.NotFound("annotation", id)
	}
	var trace string
	err := q.pool.QueryRow(ctx, `SELECT trace_id FROM rm_annotations WHERE id = $1 AND owner_id = $2`, id, owner).Scan(&trace)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", domain.NotFound("annotation", id)
	}
	return trace, err
}

type exportAnnotation struct {
	TraceID         string          `json:"trace_id"`
	TraceExternalID *string         `json:"trace_external_id"`
	StepIndex       *int            `json:"step_index"`
	Rating          *int            `json:"rating"`
	Comment         *string         `json:"comment"`
	Quote           json.RawMessage `json:"quote"`
	LabelError      bool            `json:"label_error"`
	Author          string          `json:"author"`
	MemberID        string          `json:"member_id"` // the member who made it (issue 36)
	CreatedAt       time.Time       `json:"created_at"`
	CriterionID     *string         `json:"criterion_id"`
	Value           json.RawMessage `json:"value"`
}

// ExportAnnotationsBy writes the owner's annotations as JSONL in the shape
// of spec 001 "Annotations", oldest first: one member's (issue 36's
// ?member= filter), or every member's for member "".
func (q *Queries) ExportAnnotationsBy(ctx context.Context, owner, member string, w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	var e exportAnnotation
	var quote, value []byte
	var rating *int16
	return pg.Each(ctx, q.pool, []any{&e.TraceID, &e.TraceExternalID, &e.StepIndex, &rating, &e.Comment, &quote, &e.LabelError, &e.Author, &e.MemberID, &e.CreatedAt,
		&e.CriterionID, &value}, func() error {
		e.Value = rawOrNull(value)
		e.Rating = ratingOf(rating)
		e.Quote = rawOrNull(quote)
		e.CreatedAt = e.CreatedAt.UTC()
		return enc.Encode(e)
	}, `SELECT a.trace_id, t.external_id, s.idx, a.rating, a.comment, a.quote, a.label_error, a.author_name, a.author_id, a.created_at,
		a.criterion_id, a.value
		FROM rm_annotations a JOIN rm_traces t ON t.id = a.trace_id LEFT JOIN rm_steps s ON s.id = a.step_id
		WHERE a.owner_id = $1 AND ($2 = '' OR a.author_id::text = $2) ORDER BY a.seq`, owner, member)
}

// ratingOf is a stored rating as the API shows it (nil: none).
func ratingOf(r *int16) *int {
	if r == nil {
		return nil
	}
	v := int(*r)
	return &v
}

// PairInputsBy returns what pair construction needs for the given traces
// of an owner (all of them when traceIDs is nil): the traces with their
// steps in import order, and the ratings on them of one member (issue 36's
// ?member= filter on the pairs export), or of every member for member "".
func (q *Queries) PairInputsBy(ctx context.Context, owner, member string, traceIDs []string) ([]domain.PairTrace, []domain.Rating, error) {
	var traces []domain.PairTrace
	var traceID, stepID, role, content string
	var toolName *string
	var toolInput []byte
	if err := pg.Each(ctx, q.pool, []any{&traceID, &stepID, &role, &content, &toolName, &toolInput}, func() error {
		if len(traces) == 0 || traces[len(traces)-1].ID != traceID {
			traces = append(traces, domain.PairTrace{ID: traceID})
		}
		st := domain.PairStep{ID: stepID, Role: domain.Role(role), Content: content, ToolName: domain.OrEmpty(toolName)}
		if len(toolInput) > 0 {
			if err := decodeNumbers(toolInput, &st.ToolInput); err != nil {
				return err
			}
		}
		t := &traces[len(traces)-1]
		t.Steps = append(t.Steps, st)
		return nil
	}, `SELECT t.id, s.id, s.role, s.content, s.tool_name, s.tool_input
		FROM rm_traces t JOIN rm_steps s ON s.trace_id = t.id
		WHERE t.owner_id = $1 AND ($2::uuid[] IS NULL OR t.id = ANY($2))
		ORDER BY t.import_seq, s.idx`, owner, traceIDs); err != nil {
		return nil, nil, err
	}
	ratings, err := pg.Append(ctx, q.pool, nil, func(row pgx.CollectableRow) (r domain.Rating, err error) {
		var rating int16
		err = row.Scan(&r.AnnotationID, &r.TraceID, &r.StepID, &rating, &r.LabelError)
		r.Rating = int(rating)
		return r, err
	}, `SELECT a.id, a.trace_id, COALESCE(a.step_id::text, ''), a.rating, a.label_error
		FROM rm_annotations a WHERE a.owner_id = $1 AND a.rating IS NOT NULL AND ($2::uuid[] IS NULL OR a.trace_id = ANY($2))
		  AND ($3 = '' OR a.author_id::text = $3)
		ORDER BY a.seq`, owner, traceIDs, member)
	if err != nil {
		return nil, nil, err
	}
	return traces, ratings, nil
}
