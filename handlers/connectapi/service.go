// Package connectapi serves the Connect API (schema/critic/v1) on the REST
// port: the same operations as handlers/rest with the same rules — API-key
// auth, read-only keys refused on writes, another owner's ids not found,
// read-your-writes after a command — and the same errors, mapped to Connect
// codes by edge.ConnectError. One handler answers the Connect, gRPC and
// gRPC-Web protocols. Handlers stay thin: request message → command, query
// or shared usecase.Backend operation → response message. Register mounts
// every service: TraceService, AnnotationService, RewardModelService and
// QueryService.
package connectapi

import (
	"bytes"
	"context"
	"net/http"

	"connectrpc.com/connect"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/handlers/edge"
	"github.com/criticml/critic/handlers/usecase"
	criticv1 "github.com/criticml/critic/schema/gen/critic/v1"
	"github.com/criticml/critic/schema/gen/critic/v1/criticv1connect"
)

// TraceService implements critic.v1.TraceService.
type TraceService struct{ d edge.Deps }

// Register mounts every Critic service on mux: TraceService,
// AnnotationService, RewardModelService, GepaService, QueryService,
// EvaluatorService, CriteriaService and BaseModelService. Each is built
// with authentication and error mapping at the boundary, the message size
// limit, and the REST-like JSON codec.
func Register(mux *http.ServeMux, d edge.Deps) {
	if d.MaxBody <= 0 {
		d.MaxBody = edge.DefaultMaxBody
	}
	opts := []connect.HandlerOption{
		connect.WithInterceptors(&boundary{auth: d.Auth}),
		connect.WithReadMaxBytes(int(d.MaxBody)),
		connect.WithCodec(jsonCodec{name: "json"}),
		connect.WithCodec(jsonCodec{name: "json; charset=utf-8"}),
	}
	mux.Handle(criticv1connect.NewTraceServiceHandler(&TraceService{d}, opts...))
	mux.Handle(criticv1connect.NewAnnotationServiceHandler(&AnnotationService{d}, opts...))
	mux.Handle(criticv1connect.NewRewardModelServiceHandler(&RewardModelService{d}, opts...))
	mux.Handle(criticv1connect.NewGepaServiceHandler(&GepaService{d}, opts...))
	mux.Handle(criticv1connect.NewQueryServiceHandler(&QueryService{d}, opts...))
	mux.Handle(criticv1connect.NewEvaluatorServiceHandler(&EvaluatorService{d}, opts...))
	mux.Handle(criticv1connect.NewCriteriaServiceHandler(&CriteriaService{d}, opts...))
	mux.Handle(criticv1connect.NewBaseModelServiceHandler(&BaseModelService{d}, opts...))
	mux.Handle(criticv1connect.NewTeamServiceHandler(&TeamService{d}, opts...))
}

// ListFormats lists the import formats.
func (s *TraceService) ListFormats(ctx context.Context, _ *connect.Request[criticv1.ListFormatsRequest]) (*connect.Response[criticv1.ListFormatsResponse], error) {
	out := &criticv1.ListFormatsResponse{}
	for _, f := range usecase.Formats() {
		out.Formats = append(out.Formats, &criticv1.Format{Name: f.Name, Description: f.Description})
	}
	return connect.NewResponse(out), nil
}

// ImportTraces imports a payload and answers once the traces are readable.
func (s *TraceService) ImportTraces(ctx context.Context, req *connect.Request[criticv1.ImportTracesRequest]) (*connect.Response[criticv1.ImportTracesResponse], error) {
	m := req.Msg
	// proto3 cannot tell an empty string from an absent one; both are absent.
	if m.Format == "" {
		return nil, domain.InvalidField("format", "format is required")
	}
	if len(m.Data) == 0 {
		return nil, domain.InvalidField("data", "data is required")
	}
	in := commands.ImportTracesInput{Format: m.Format, Data: []byte(m.Data), Contribute: m.Contribute}
	res, err := s.d.Backend().ImportTraces(ctx, edge.CallerFrom(ctx), in, m.SourceId)
	return reply(&criticv1.ImportTracesResponse{
		Format: res.Format, Imported: int32(len(res.TraceIDs)), TraceIds: res.TraceIDs,
		Unchanged: int32(res.Unchanged), AnnotationsRemoved: int32(res.AnnotationsRemoved), Erased: res.Erased,
	}, err)
}

// ListTraces pages through the caller's traces with REST's filter rules.
func (s *TraceService) ListTraces(ctx context.Context, req *connect.Request[criticv1.ListTracesRequest]) (*connect.Response[criticv1.ListTracesResponse], error) {
	m := req.Msg
	p := usecase.ListParams{SourceID: m.GetSourceId(), From: m.GetFrom(), To: m.GetTo(), TZ: m.GetTz(), Q: m.GetQ(), Sort: m.GetSort(),
		Outcomes: m.GetOutcome(), ActionCreditMin: m.ActionCreditMin, ActionCreditMax: m.ActionCreditMax,
		TraceScoreMin: m.TraceScoreMin, TraceScoreMax: m.TraceScoreMax, LatestScoreMin: m.LatestScoreMin, LatestScoreMax: m.LatestScoreMax,
		Limit: intPtr(m.Limit), Offset: intPtr(m.Offset)}
	f, err := p.Filter()
	if err != nil {
		return nil, err
	}
	owner := edge.CallerFrom(ctx).UserID
	if f.Member, err = s.d.Backend().MemberFilter(ctx, owner, m.GetMember()); err != nil {
		return nil, err
	}
	traces, total, err := s.d.Queries.ListTraces(ctx, owner, f)
	if err != nil {
		return nil, err
	}
	list, err := shapes[*criticv1.TraceSummary](traces)
	return reply(&criticv1.ListTracesResponse{Total: int32(total), Traces: list}, err)
}

// GetTrace returns one of the caller's traces.
func (s *TraceService) GetTrace(ctx context.Context, req *connect.Request[criticv1.GetTraceRequest]) (*connect.Response[criticv1.GetTraceResponse], error) {
	d, err := s.d.Queries.GetTrace(ctx, edge.CallerFrom(ctx).UserID, req.Msg.TraceId)
	if err != nil {
		return nil, err
	}
	t, err := detailToProto(d)
	return reply(&criticv1.GetTraceResponse{Trace: t}, err)
}

// DeleteTrace deletes one of the caller's traces and answers once it is gone
// from the read model.
func (s *TraceService) DeleteTrace(ctx context.Context, req *connect.Request[criticv1.DeleteTraceRequest]) (*connect.Response[criticv1.DeleteTraceResponse], error) {
	err := s.d.Backend().DeleteTrace(ctx, edge.CallerFrom(ctx), req.Msg.TraceId)
	return reply(&criticv1.DeleteTraceResponse{}, err)
}

// ExportTraces streams the REST export, one JSONL line per message.
func (s *TraceService) ExportTraces(ctx context.Context, _ *connect.Request[criticv1.ExportTracesRequest], stream *connect.ServerStream[criticv1.ExportTracesResponse]) error {
	w := &lineWriter{send: func(line []byte) error {
		return stream.Send(&criticv1.ExportTracesResponse{Line: string(line)})
	}}
	if err := s.d.Queries.ExportTraces(ctx, edge.CallerFrom(ctx).UserID, w); err != nil {
		return err
	}
	return w.flush()
}

// reply is an RPC's end: err, else msg as the response.
func reply[R any](msg *R, err error) (*connect.Response[R], error) {
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(msg), nil
}

// lineWriter turns the JSONL the export query writes into one message per
// line, without assuming how the writes are split.
type lineWriter struct {
	buf  []byte
	send func([]byte) error
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		if err := w.send(w.buf[:i]); err != nil {
			return 0, err
		}
		w.buf = w.buf[i+1:]
	}
}

// flush sends a last line that had no newline.
func (w *lineWriter) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	return w.send(w.buf)
}
