package otlp

import (
	"cmp"
	"compress/gzip"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/formats"
	"github.com/criticml/critic/domain/members"
	"github.com/criticml/critic/handlers/edge"
	"github.com/criticml/critic/handlers/usecase"
)

// Path is the OTLP/HTTP traces endpoint: with
// OTEL_EXPORTER_OTLP_ENDPOINT=<host>/api/v1/rm/otel an SDK posts here.
const Path = "/api/v1/rm/otel/v1/traces"

// LogsPath receives OTLP log records: the OpenTelemetry GenAI
// instrumentations (@opentelemetry/instrumentation-openai, the Python
// opentelemetry-instrumentation-openai-v2) put message content in log
// records, not on spans, so a trace is rebuilt from both.
const LogsPath = "/api/v1/rm/otel/v1/logs"

// MetricsPath answers metric exports (an SDK configured with one OTLP
// endpoint sends all three signals) with a partial success saying they are
// not stored, instead of a 404 the SDK would log on every export.
const MetricsPath = "/api/v1/rm/otel/v1/metrics"

// LangfusePath is the path Langfuse's OTel exporter posts to, so an app
// instrumented with Langfuse's SDK only changes its base URL
// (LANGFUSE_BASE_URL) to export to Critic; the Critic API key is the Basic
// auth password (LANGFUSE_SECRET_KEY).
const LangfusePath = "/api/public/otel/v1/traces"

// Receiver accepts OTLP/HTTP trace and log exports (protobuf or JSON,
// optionally gzip) from any OpenTelemetry SDK.
// It uses d's Cmds, Waiter, Auth and MaxBody.
type Receiver struct{ d edge.Deps }

// NewReceiver returns the receiver over d.
func NewReceiver(d edge.Deps) *Receiver { return &Receiver{d} }

// Register mounts the endpoints on mux.
func (rc *Receiver) Register(mux interface{ Handle(string, http.Handler) }) {
	mux.Handle("POST "+Path, rc.d.Auth.Middleware(http.HandlerFunc(rc.serveTraces)))
	mux.Handle("POST "+LogsPath, rc.d.Auth.Middleware(http.HandlerFunc(rc.serveLogs)))
	mux.Handle("POST "+MetricsPath, rc.d.Auth.Middleware(http.HandlerFunc(rc.serveMetrics)))
	mux.Handle("POST "+LangfusePath, basicAsBearer(rc.d.Auth.Middleware(http.HandlerFunc(rc.serveTraces))))
}

// basicAsBearer accepts HTTP Basic auth with the Critic API key as the
// password (Langfuse's exporter sends public key:secret key), by handing the
// authenticator the password as a bearer token.
func basicAsBearer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := r.Header.Get("Authorization")
		if scheme, cred, ok := strings.Cut(h, " "); ok && strings.EqualFold(scheme, "Basic") {
			if raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred)); err == nil {
				if _, password, ok := strings.Cut(string(raw), ":"); ok {
					r = r.Clone(r.Context())
					r.Header.Set("Authorization", "Bearer "+password)
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

const (
	ctProto = "application/x-protobuf"
	ctJSON  = "application/json"
)

// signal is what differs between the trace and log endpoints: how a body
// decodes into records to store, and how the answer is encoded.
type signal struct {
	// split decodes the body into records; rejected counts those it could
	// not use, explained by why.
	split func(ct string, body []byte) (recs []formats.RawSpan, rejected int64, why string, err error)
	// answer encodes the export response with its partial success.
	answer func(ct string, rejected int64, msg string) ([]byte, error)
	// rejectedOf is how many of a receipt's rejections this signal reports.
	rejectedOf func(commands.OTelReceipt) int64
}

var traceSignal = signal{
	split: func(ct string, body []byte) ([]formats.RawSpan, int64, string, error) {
		req := ptraceotlp.NewExportRequest()
		if err := unmarshal(ct, body, req.UnmarshalProto, req.UnmarshalJSON); err != nil {
			return nil, 0, "", err
		}
		raws, err := SplitPData(req.Traces())
		return raws, 0, "", err
	},
	answer: func(ct string, rejected int64, msg string) ([]byte, error) {
		resp := ptraceotlp.NewExportResponse()
		resp.PartialSuccess().SetRejectedSpans(rejected)
		resp.PartialSuccess().SetErrorMessage(msg)
		return marshal(ct, resp.MarshalProto, resp.MarshalJSON)
	},
	rejectedOf: func(r commands.OTelReceipt) int64 { return r.RejectedSpans },
}

var logSignal = signal{
	split: func(ct string, body []byte) ([]formats.RawSpan, int64, string, error) {
		req := plogotlp.NewExportRequest()
		if err := unmarshal(ct, body, req.UnmarshalProto, req.UnmarshalJSON); err != nil {
			return nil, 0, "", err
		}
		if req.Logs().LogRecordCount() == 0 {
			return nil, 0, "", nil
		}
		raws, unjoinable, other, err := SplitPLogs(req.Logs())
		var why []string
		if unjoinable > 0 {
			why = append(why, fmt.Sprintf("%d log records carry no trace id, so they join no conversation", unjoinable))
		}
		if other > 0 {
			why = append(why, fmt.Sprintf("%d log records are not GenAI events (event name gen_ai.*) and are not stored", other))
		}
		return raws, int64(unjoinable + other), strings.Join(why, "; "), err
	},
	answer: func(ct string, rejected int64, msg string) ([]byte, error) {
		resp := plogotlp.NewExportResponse()
		resp.PartialSuccess().SetRejectedLogRecords(rejected)
		resp.PartialSuccess().SetErrorMessage(msg)
		return marshal(ct, resp.MarshalProto, resp.MarshalJSON)
	},
	rejectedOf: func(r commands.OTelReceipt) int64 { return r.RejectedLogs },
}

func (rc *Receiver) serveTraces(w http.ResponseWriter, r *http.Request) { rc.serve(w, r, traceSignal) }
func (rc *Receiver) serveLogs(w http.ResponseWriter, r *http.Request)   { rc.serve(w, r, logSignal) }

// serve answers one export. A request that decodes is accepted (200): what
// it holds that cannot be used — a trace whose content does not build, log
// records outside any trace — is reported in the response's partial_success
// (OTLP exporters drop a whole batch on a 400, which would lose the good
// traces beside a bad one). Contention on a trace is absorbed by the
// command; if it cannot be, the answer is 503 with Retry-After, which every
// OTLP exporter retries.
func (rc *Receiver) serve(w http.ResponseWriter, r *http.Request, sig signal) {
	caller := edge.CallerFrom(r.Context())
	if err := edge.Permit(caller, members.Ingest); err != nil {
		edge.WriteError(w, err)
		return
	}
	ct, body, ok := rc.read(w, r)
	if !ok {
		return
	}
	raws, rejected, why, err := sig.split(ct, body)
	var msgs []string
	if why != "" {
		msgs = append(msgs, why)
	}
	if err == nil && len(raws) > 0 {
		source := cmp.Or(r.Header.Get("X-Critic-Trace-Source"), r.Header.Get("X-Stash-Trace-Source"))
		var receipt commands.OTelReceipt
		receipt, err = rc.d.Cmds.ReceiveOTelSpans.Handle(r.Context(), commands.ReceiveOTelSpans{Actor: usecase.Actor(caller), Spans: raws, SourceID: source})
		if err == nil {
			err = rc.d.Waiter.Wait(r.Context(), receipt.LastEventID)
		}
		rejected += sig.rejectedOf(receipt)
		if receipt.ErrorMessage != "" {
			msgs = append(msgs, receipt.ErrorMessage)
		}
	}
	if v, ok := errors.AsType[*domain.ValidationError](err); ok {
		// OTLP clients treat 400 as "do not retry": the request cannot parse.
		badRequest(w, v.Error())
		return
	}
	if err != nil {
		writeError(w, err)
		return
	}
	rc.answer(w, ct, sig.answer, rejected, strings.Join(msgs, "; "))
}

// serveMetrics decodes a metrics export and answers that none of its data
// points are stored: Critic reads conversations from traces and logs.
func (rc *Receiver) serveMetrics(w http.ResponseWriter, r *http.Request) {
	ct, body, ok := rc.read(w, r)
	if !ok {
		return
	}
	req := pmetricotlp.NewExportRequest()
	if err := unmarshal(ct, body, req.UnmarshalProto, req.UnmarshalJSON); err != nil {
		badRequest(w, err.Error())
		return
	}
	n := int64(req.Metrics().DataPointCount())
	rc.answer(w, ct, func(ct string, rejected int64, msg string) ([]byte, error) {
		resp := pmetricotlp.NewExportResponse()
		resp.PartialSuccess().SetRejectedDataPoints(rejected)
		resp.PartialSuccess().SetErrorMessage(msg)
		return marshal(ct, resp.MarshalProto, resp.MarshalJSON)
	}, n, "Critic does not store metrics: it reads conversations from traces and logs; "+
		"stop exporting metrics to this endpoint (OTEL_METRICS_EXPORTER=none)")
}

// read checks the content type and reads the body; on failure it has
// answered.
func (rc *Receiver) read(w http.ResponseWriter, r *http.Request) (string, []byte, bool) {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct != ctProto && ct != ctJSON {
		edge.WriteError(w, &domain.UnsupportedMediaError{Message: "unsupported content type " + quoteOrEmpty(ct) + ": send application/x-protobuf or application/json"})
		return "", nil, false
	}
	body, err := rc.readBody(w, r)
	if err != nil {
		edge.WriteError(w, err)
		return "", nil, false
	}
	return ct, body, true
}

// answer writes the export response. With nothing rejected it is empty: no
// bytes in protobuf, {} in JSON (pdata's JSON marshaler would add an empty
// partialSuccess).
func (rc *Receiver) answer(w http.ResponseWriter, ct string, enc func(string, int64, string) ([]byte, error), rejected int64, msg string) {
	var out []byte
	if rejected > 0 || msg != "" {
		var err error
		if out, err = enc(ct, rejected, msg); err != nil {
			edge.WriteError(w, err)
			return
		}
	} else if ct == ctJSON {
		out = []byte("{}")
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
}

// writeError answers an error; a 503 carries Retry-After so that exporters
// back off and retry instead of dropping the batch.
func writeError(w http.ResponseWriter, err error) {
	if _, ok := errors.AsType[*domain.UnavailableError](err); ok {
		w.Header().Set("Retry-After", "1")
	}
	edge.WriteError(w, err)
}

func unmarshal(ct string, body []byte, fromProto, fromJSON func([]byte) error) error {
	var err error
	if ct == ctProto {
		err = fromProto(body)
	} else {
		err = fromJSON(body)
	}
	if err != nil {
		return domain.Invalid("could not decode the OTLP request: %v", err)
	}
	return nil
}

func marshal(ct string, toProto, toJSON func() ([]byte, error)) ([]byte, error) {
	if ct == ctProto {
		return toProto()
	}
	return toJSON()
}

// readBody reads the body within the limit, decompressing gzip; any other
// Content-Encoding is 415.
func (rc *Receiver) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	limited := http.MaxBytesReader(w, r.Body, rc.d.MaxBody)
	var rd io.Reader = limited
	switch enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(limited)
		if err != nil {
			return nil, domain.Invalid("invalid gzip body: %v", err)
		}
		defer zr.Close()
		rd = io.LimitReader(zr, rc.d.MaxBody+1)
	default:
		return nil, &domain.UnsupportedMediaError{Message: "unsupported Content-Encoding " + quoteOrEmpty(enc) + ": send gzip or none"}
	}
	body, err := io.ReadAll(rd)
	if mbe, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return nil, &domain.TooLargeError{Limit: mbe.Limit}
	}
	if err != nil {
		return nil, domain.Invalid("could not read the request body: %v", err)
	}
	if int64(len(body)) > rc.d.MaxBody {
		return nil, &domain.TooLargeError{Limit: rc.d.MaxBody}
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
