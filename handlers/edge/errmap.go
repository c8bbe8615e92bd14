package edge

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"connectrpc.com/connect"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/platform/requestid"
)

// ErrorBody is the JSON error every REST route answers with. `detail` is the
// human-readable message (FastAPI-compatible, as the spec's clients expect);
// `code`, `line` and `field` let a client point at the problem.
type ErrorBody struct {
	Detail string `json:"detail"`
	Code   string `json:"code"`
	Line   int    `json:"line,omitempty"`
	Field  string `json:"field,omitempty"`
	// RequestID is the request's id (also in the X-Request-Id header), so a
	// user reporting an error hands the operator the key to every log line
	// and event it caused.
	RequestID string `json:"request_id,omitempty"`
}

// logInternal logs an internal error at ERROR — unless it is only the
// request's context ending (the client hung up: a worker stopping mid
// heartbeat, a browser tab closed), which is routine and logged at DEBUG, so
// `level=ERROR` keeps meaning something an operator must look at.
func logInternal(ctx context.Context, err error, attrs ...any) {
	if errors.Is(err, context.Canceled) {
		slog.DebugContext(ctx, "request canceled before it finished", append([]any{"err", err}, attrs...)...)
		return
	}
	slog.ErrorContext(ctx, "internal error", append([]any{"err", err}, attrs...)...)
}

func classify(err error) (int, ErrorBody) {
	var (
		v   *domain.ValidationError
		nf  *domain.NotFoundError
		cf  *domain.ConflictError
		gn  *domain.GoneError
		vc  *domain.VersionConflictError
		se  *domain.SyncError
		ua  *domain.UnauthorizedError
		fb  *domain.ForbiddenError
		tl  *domain.TooLargeError
		um  *domain.UnsupportedMediaError
		una *domain.UnavailableError
		pp  *domain.ProjectionParkedError
		sc  *domain.SnapshotCatchingUpError
		mbe *http.MaxBytesError
	)
	switch {
	case errors.As(err, &v):
		return http.StatusUnprocessableEntity, ErrorBody{Detail: v.Error(), Code: v.Code, Line: v.Line, Field: v.Field}
	case errors.As(err, &nf):
		return http.StatusNotFound, ErrorBody{Detail: nf.Error(), Code: "not_found"}
	case errors.As(err, &se):
		return http.StatusConflict, ErrorBody{Detail: se.Error(), Code: "trace_sync_error"}
	case errors.As(err, &cf):
		return http.StatusConflict, ErrorBody{Detail: cf.Error(), Code: cf.Code}
	case errors.As(err, &gn):
		return http.StatusGone, ErrorBody{Detail: gn.Error(), Code: gn.Code}
	case errors.As(err, &vc):
		return http.StatusConflict, ErrorBody{Detail: "another write changed the same data; retry", Code: jobs.CodeConcurrentWrite}
	case errors.As(err, &ua):
		return http.StatusUnauthorized, ErrorBody{Detail: ua.Error(), Code: "unauthorized"}
	case errors.As(err, &fb):
		return http.StatusForbidden, ErrorBody{Detail: fb.Error(), Code: "forbidden"}
	case errors.As(err, &tl):
		return http.StatusRequestEntityTooLarge, ErrorBody{Detail: tl.Error(), Code: "body_too_large"}
	case errors.As(err, &mbe):
		return http.StatusRequestEntityTooLarge, ErrorBody{Detail: (&domain.TooLargeError{Limit: mbe.Limit}).Error(), Code: "body_too_large"}
	case errors.As(err, &um):
		return http.StatusUnsupportedMediaType, ErrorBody{Detail: um.Error(), Code: "unsupported_media_type"}
	case errors.As(err, &pp):
		return http.StatusServiceUnavailable, ErrorBody{Detail: pp.Error(), Code: "projection_parked"}
	case errors.As(err, &sc):
		return http.StatusServiceUnavailable, ErrorBody{Detail: sc.Error(), Code: "snapshot_catching_up"}
	case errors.As(err, &una):
		return http.StatusServiceUnavailable, ErrorBody{Detail: una.Error(), Code: cmp.Or(una.Code, "unavailable")}
	}
	return http.StatusInternalServerError, ErrorBody{Detail: "internal error", Code: "internal"}
}

// WriteError answers a REST request with err. The body carries the request
// id Observe put in the response headers.
func WriteError(w http.ResponseWriter, err error) {
	status, body := classify(err)
	if s := retryAfter(err); s > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(s))
	}
	body.RequestID = w.Header().Get(requestid.Header)
	if status == http.StatusInternalServerError {
		logInternal(context.Background(), err, "request_id", body.RequestID)
	}
	WriteJSON(w, status, body)
}

// WriteJSON writes v as the JSON response.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// retryAfter is the delay, in seconds, an unavailable answer asks the client
// to wait before retrying (0: none named). REST sends it as the Retry-After
// header, Connect as the same key in the error's metadata.
func retryAfter(err error) int {
	if una := (*domain.UnavailableError)(nil); errors.As(err, &una) {
		return una.RetryAfterSeconds
	}
	return 0
}

// ConnectErrorContext maps err to a Connect error with the matching code;
// an internal error is logged with the call's request id.
func ConnectErrorContext(ctx context.Context, err error) error {
	status, body := classify(err)
	if status == http.StatusInternalServerError {
		logInternal(ctx, err)
	}
	return connectError(status, body, retryAfter(err))
}

// connectCodes are the Connect codes of the REST statuses classify
// answers; any other is internal.
var connectCodes = map[int]connect.Code{
	http.StatusUnprocessableEntity:   connect.CodeInvalidArgument,
	http.StatusNotFound:              connect.CodeNotFound,
	http.StatusConflict:              connect.CodeAborted,
	http.StatusGone:                  connect.CodeFailedPrecondition,
	http.StatusUnauthorized:          connect.CodeUnauthenticated,
	http.StatusForbidden:             connect.CodePermissionDenied,
	http.StatusRequestEntityTooLarge: connect.CodeResourceExhausted,
	http.StatusServiceUnavailable:    connect.CodeUnavailable,
}

func connectError(status int, body ErrorBody, retryAfterSeconds int) error {
	code, ok := connectCodes[status]
	switch {
	case !ok:
		code = connect.CodeInternal
	case status == http.StatusConflict && body.Code == "trace_sync_error":
		code = connect.CodeFailedPrecondition
	}
	ce := connect.NewError(code, errors.New(body.Detail))
	if retryAfterSeconds > 0 {
		ce.Meta().Set("Retry-After", strconv.Itoa(retryAfterSeconds))
	}
	return ce
}
