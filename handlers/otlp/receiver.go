package otlp

import (
	"compress/gzip"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"

	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/handlers/edge"
	"github.com/criticml/critic/handlers/usecase"
	"github.com/criticml/critic/projections/readmodel"
)

// Path is the OTLP/HTTP traces endpoint: with
// OTEL_EXPORTER_OTLP_ENDPOINT=<host>/api/v1/rm/otel an SDK posts here.
const Path = "/api/v1/rm/otel/v1/traces"

// Receiver accepts OTLP/HTTP trace exports (protobuf or JSON, optionally
// gzip) from any OpenTelemetry SDK.
type Receiver struct {
	cmds    *commands.Commands
	waiter  *readmodel.Waiter
	auth    *edge.Authenticator
	maxBody int64
}

// NewReceiver returns the receiver.
func NewReceiver(cmds *commands.Commands, waiter *readmodel.Waiter, auth *edge.Authenticator, maxBody int64) *Receiver {
	return &Receiver{cmds: cmds, waiter: waiter, auth: auth, maxBody: maxBody}
}

// Register mounts the endpoint on mux.
func (rc *Receiver) Register(mux interface{ Handle(string, http.Handler) }) {
	mux.Handle("POST "+Path, rc.auth.Middleware(http.HandlerFunc(rc.serve)))
}

const (
	ctProto = "application/x-protobuf"
	ctJSON  = "application/json"
)

func (rc *Receiver) serve(w http.ResponseWriter, r *http.Request) {
	caller := edge.CallerFrom(r.Context())
	if err := edge.RequireWrite(caller); err != nil {
		edge.WriteError(w, err)
		return
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct != ctProto && ct != ctJSON {
		edge.WriteError(w, &domain.UnsupportedMediaError{Message: "unsupported content type " + quoteOrEmpty(ct) + ": send application/x-protobuf or application/json"})
		return
	}
	body, err := rc.readBody(w, r)
	if err != nil {
		edge.WriteError(w, err)
		return
	}
	req := ptraceotlp.NewExportRequest()
	if ct == ctProto {
		err = req.UnmarshalProto(body)
	} else {
		err = req.UnmarshalJSON(body)
	}
	if err != nil {
		badRequest(w, "could not decode the OTLP request: "+err.Error())
		return
	}
	raws, err := SplitPData(req.Traces())
	if err == nil && len(raws) > 0 {
		source := r.Header.Get("X-Critic-Trace-Source")
		if source == "" {
			source = r.Header.Get("X-Stash-Trace-Source")
		}
		var res commands.Result
		res, err = rc.cmds.ReceiveOTelSpans(r.Context(), usecase.Actor(caller), raws, source)
		if err == nil {
			err = rc.waiter.Wait(r.Context(), res.LastEventID)
		}
	}
	var v *domain.ValidationError
	if errors.As(err, &v) {
		// OTLP clients treat 400 as "do not retry": the spans cannot parse.
		badRequest(w, v.Error())
		return
	}
	if err != nil {
		edge.WriteError(w, err)
		return
	}
	// An empty ExportTraceServiceResponse: no bytes in protobuf, {} in JSON
	// (pdata's JSON marshaler would add an empty partialSuccess).
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(http.StatusOK)
	if ct == ctJSON {
		_, _ = w.Write([]byte("{}"))
	}
}

// readBody reads the body within the limit, decompressing gzip; any other
// Content-Encoding is 415.
func (rc *Receiver) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	limited := http.MaxBytesReader(w, r.Body, rc.maxBody)
	var rd io.Reader = limited
	switch enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(limited)
		if err != nil {
			return nil, domain.Invalid("invalid gzip body: %v", err)
		}
		defer zr.Close()
		rd = io.LimitReader(zr, rc.maxBody+1)
	default:
		return nil, &domain.UnsupportedMediaError{Message: "unsupported Content-Encoding " + quoteOrEmpty(enc) + ": send gzip or none"}
	}
	body, err := io.ReadAll(rd)
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return nil, &domain.TooLargeError{Limit: mbe.Limit}
	}
	if err != nil {
		return nil, domain.Invalid("could not read the request body: %v", err)
	}
	if int64(len(body)) > rc.maxBody {
		return nil, &domain.TooLargeError{Limit: rc.maxBody}
	}
	return body, nil
}

func badRequest(w http.ResponseWriter, msg string) {
	edge.WriteJSON(w, http.StatusBadRequest, edge.ErrorBody{Detail: msg, Code: "invalid_spans"})
}

func quoteOrEmpty(s string) string {
	if s == "" {
		return "(none)"
	}
	return `"` + s + `"`
}
