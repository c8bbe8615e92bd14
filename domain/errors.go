package domain

import (
	"cmp"
	"errors"
	"fmt"
)

// The typed errors below are the only errors that reach a client with a
// specific status; handlers map them in one place (handlers/errmap.go). Any
// other error is an internal error and is reported without details.

// ValidationError says exactly what is wrong with a request: which line of a
// JSONL payload and which field, so a user can fix the file. Maps to 422.
type ValidationError struct {
	Code    string // machine-readable, e.g. "invalid_trace", "unknown_format"
	Message string
	Line    int    // 1-based line of a JSONL payload; 0 when not line-oriented
	Field   string // JSON path of the offending field, e.g. "steps[2].role"
}

func (e *ValidationError) Error() string {
	msg := e.Message
	if e.Field != "" {
		msg = e.Field + ": " + msg
	}
	if e.Line > 0 {
		msg = fmt.Sprintf("line %d: %s", e.Line, msg)
	}
	return msg
}

// Invalid builds a ValidationError with code "invalid_request".
func Invalid(format string, args ...any) *ValidationError {
	return &ValidationError{Code: "invalid_request", Message: fmt.Sprintf(format, args...)}
}

// InvalidField builds a ValidationError with code "invalid_request" that
// names the request field it refuses.
func InvalidField(field, msg string) *ValidationError {
	return &ValidationError{Code: "invalid_request", Field: field, Message: msg}
}

// InvalidAt builds a ValidationError tied to a JSONL line and a field path.
func InvalidAt(line int, field, format string, args ...any) *ValidationError {
	return &ValidationError{Code: "invalid_trace", Line: line, Field: field, Message: fmt.Sprintf(format, args...)}
}

// AtLine returns err located at a JSONL line: a ValidationError gets the line
// (unless it already has one), any other error becomes one.
func AtLine(err error, line int) error {
	if err == nil {
		return nil
	}
	if v, ok := errors.AsType[*ValidationError](err); ok {
		c := *v
		c.Line = cmp.Or(c.Line, line)
		return &c
	}
	return &ValidationError{Code: "invalid_trace", Line: line, Message: err.Error()}
}

// NotFoundError is a missing resource or one that belongs to another owner —
// the two are indistinguishable to the caller by design. Maps to 404.
type NotFoundError struct {
	What string // "trace", "annotation", "reward model", …
	ID   string
}

func (e *NotFoundError) Error() string {
	if e.ID == "" {
		return e.What + " not found"
	}
	return fmt.Sprintf("%s %s not found", e.What, e.ID)
}

// NotFound builds a NotFoundError.
func NotFound(what, id string) *NotFoundError { return &NotFoundError{What: what, ID: id} }

// ConflictError is a state conflict the caller can resolve (retrying a model
// that has not failed, a concurrent write). Maps to 409.
type ConflictError struct {
	Code    string
	Message string
}

func (e *ConflictError) Error() string { return e.Message }

// GoneError is something that existed and is spent for good (a one-time
// sign-in link used, expired or revoked): asking again cannot succeed.
// Maps to 410.
type GoneError struct {
	Code    string
	Message string
}

func (e *GoneError) Error() string { return e.Message }

// VersionConflictError is returned by the event store when a stream moved past
// the expected version: someone else appended first. Commands retry or report
// it as a ConflictError; it never overwrites silently.
type VersionConflictError struct {
	Stream   string
	Expected int64
	Actual   int64
}

func (e *VersionConflictError) Error() string {
	return fmt.Sprintf("stream %s is at version %d, expected %d", e.Stream, e.Actual, e.Expected)
}

// SyncError is a session snapshot that does not extend the stored trace
// (trace_sync_error): the stored trace and its review are kept. Maps to 409.
type SyncError struct{ Message string }

func (e *SyncError) Error() string { return e.Message }

// UnauthorizedError is a missing or unknown API key. Maps to 401.
type UnauthorizedError struct{ Message string }

func (e *UnauthorizedError) Error() string { return e.Message }

// ForbiddenError is a known key that may not do this (a read-only key writing).
// Maps to 403.
type ForbiddenError struct{ Message string }

func (e *ForbiddenError) Error() string { return e.Message }

// TooLargeError is a request body over the configured limit. Maps to 413.
type TooLargeError struct{ Limit int64 }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("request body exceeds the limit of %d bytes", e.Limit)
}

// UnsupportedMediaError is a content type or encoding the endpoint does not
// accept. Maps to 415.
type UnsupportedMediaError struct{ Message string }

func (e *UnsupportedMediaError) Error() string { return e.Message }

// UnavailableError says a dependency the request needs is not there yet (the
// read model did not catch up in time, or a capacity limit is full). Maps to
// 503, with Retry-After when RetryAfterSeconds is set.
type UnavailableError struct {
	Message string
	// Code replaces the generic "unavailable" when set (e.g. "query_capacity").
	Code string
	// RetryAfterSeconds, when positive, is sent as Retry-After.
	RetryAfterSeconds int
}

func (e *UnavailableError) Error() string { return e.Message }

// ProjectionParkedError says an owner's writes are stored but will not show
// until an operator acts: one of the owner's events could not be applied to
// a projection and is parked, so that owner's later events are held back
// (every other owner's keep flowing). Waiting longer would not help, so the
// API says so at once instead of timing out. Maps to 503.
type ProjectionParkedError struct {
	Projection string
	EventID    string
	EventType  string
}

func (e *ProjectionParkedError) Error() string {
	return "the write was stored, but this account's updates to the " + e.Projection + " projection are paused: event " +
		e.EventID + " (" + e.EventType + ") could not be applied and is parked; an operator must fix the cause " +
		"(see `critic projections status`) and run `critic projections retry " + e.EventID + "`"
}

// SnapshotCatchingUpError says this API instance's query snapshot has not
// yet applied the event-log position a query needs (the caller's last write,
// or the log head when the instance started), so answering now could return
// partial data. Waiting a moment or asking another instance helps. Maps to
// 503 with code snapshot_catching_up.
type SnapshotCatchingUpError struct {
	// Applied is the log position up to which every event is in the snapshot.
	Applied int64
	// Needed is the position the query must see.
	Needed int64
}

func (e *SnapshotCatchingUpError) Error() string {
	return fmt.Sprintf("this instance's query snapshot is catching up with the event log: it has applied events up to "+
		"position %d, this query needs position %d (%d to go); retry shortly", e.Applied, e.Needed, max(e.Needed-e.Applied, 0))
}
