// Package queryhost runs the query snapshots — the DuckDB files of
// `POST /query`, their replicas and the snapshot projection's writes — in a
// child process of the API under an operating-system memory limit, so that
// no tenant's SQL can grow the API's memory.
//
// DuckDB's memory_limit bounds its buffer pool, not every allocation: a
// list built by a scalar function (`list_sort(range(3e7))`) is allocated
// outside it, and so is constant folding at plan time, where no interrupt
// is checked either. Measured in one process with memory_limit 200 MB: such
// a statement peaked at 3 GB resident whether folded or executed. Only the
// kernel can bound that, and only per process: the child sets RLIMIT_DATA
// on itself, an allocation past it fails inside DuckDB (the query answers
// 422 with DuckDB's out-of-memory text), and a child that dies anyway is
// restarted while the API keeps serving everything else.
//
// The API (the parent) keeps the Kafka consumer, the projection guard and
// the snapshot position; it sends each batch of events the snapshot handles
// (claim checks resolved) to the child, and each query. The child holds no
// credentials: no database, no blob store, no provider keys.
package queryhost

import (
	"errors"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/platform/duck"
)

// Config is what the parent writes to the child's standard input: the
// snapshot directory, the query options, the memory limit and the socket
// to listen on.
type Config struct {
	Dir         string       `json:"dir"`
	Socket      string       `json:"socket"`
	MemoryLimit int64        `json:"memory_limit"`
	Options     duck.Options `json:"options"`
}

// queryRequest is the body of the child's POST /query.
type queryRequest struct {
	Owner string `json:"owner"`
	SQL   string `json:"sql"`
}

// wireError carries the typed errors the API maps to status codes across
// the socket; anything else arrives as an internal error with its text.
type wireError struct {
	Kind    string `json:"kind"` // validation, unavailable, unreadable, internal
	Message string `json:"message"`
	Code    string `json:"code,omitempty"`
	Field   string `json:"field,omitempty"`
	Line    int    `json:"line,omitempty"`
	Retry   int    `json:"retry_after,omitempty"`
	EventID string `json:"event_id,omitempty"`
	Type    string `json:"type,omitempty"`
	Stream  string `json:"stream,omitempty"`
}

func encodeError(err error) wireError {
	var (
		ve *domain.ValidationError
		ue *domain.UnavailableError
		re *events.UnreadableError
	)
	switch {
	case errors.As(err, &ve):
		return wireError{Kind: "validation", Message: ve.Message, Code: ve.Code, Field: ve.Field, Line: ve.Line}
	case errors.As(err, &ue):
		return wireError{Kind: "unavailable", Message: ue.Message, Code: ue.Code, Retry: ue.RetryAfterSeconds}
	case errors.As(err, &re):
		return wireError{Kind: "unreadable", Message: re.Err.Error(), EventID: re.EventID, Type: re.Type, Stream: re.Stream}
	default:
		return wireError{Kind: "internal", Message: err.Error()}
	}
}

func (w wireError) decode() error {
	switch w.Kind {
	case "validation":
		return &domain.ValidationError{Code: w.Code, Message: w.Message, Field: w.Field, Line: w.Line}
	case "unavailable":
		return &domain.UnavailableError{Code: w.Code, Message: w.Message, RetryAfterSeconds: w.Retry}
	case "unreadable":
		return &events.UnreadableError{EventID: w.EventID, Type: w.Type, Stream: w.Stream, Err: errors.New(w.Message)}
	default:
		return errors.New("query process: " + w.Message)
	}
}
