package connectapi

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"
	"connectrpc.com/grpcreflect"

	"github.com/criticml/critic/schema/gen/critic/v1/criticv1connect"
)

// Services names every Critic Connect service, as gRPC health and
// reflection list them.
var Services = []string{
	criticv1connect.TraceServiceName,
	criticv1connect.AnnotationServiceName,
	criticv1connect.RewardModelServiceName,
	criticv1connect.GepaServiceName,
	criticv1connect.QueryServiceName,
	criticv1connect.EvaluatorServiceName,
	criticv1connect.CriteriaServiceName,
	criticv1connect.TeamServiceName,
	criticv1connect.BaseModelServiceName,
}

// RegisterHealthAndReflection mounts grpc.health.v1 (so gRPC load balancers
// and Kubernetes gRPC probes can ask) and server reflection, v1 and
// v1alpha (so grpcurl and Postman discover the API without the protos), on
// the Connect port. ready answers health checks: the whole server ("") and
// each service are SERVING while it returns nil and NOT_SERVING otherwise,
// the same verdict as /readyz. Reflection needs no credentials, like the
// published OpenAPI document: it describes the API, never anyone's data.
func RegisterHealthAndReflection(mux *http.ServeMux, ready func(context.Context) error) {
	mux.Handle(grpchealth.NewHandler(healthChecker(ready)))
	reflector := grpcreflect.NewStaticReflector(append([]string{grpchealth.HealthV1ServiceName}, Services...)...)
	mux.Handle(grpcreflect.NewHandlerV1(reflector))
	mux.Handle(grpcreflect.NewHandlerV1Alpha(reflector))
}

// healthChecker answers with ready's verdict (nil: always serving).
type healthChecker func(context.Context) error

func (ready healthChecker) Check(ctx context.Context, req *grpchealth.CheckRequest) (*grpchealth.CheckResponse, error) {
	if req.Service != "" && req.Service != grpchealth.HealthV1ServiceName && !slices.Contains(Services, req.Service) {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("unknown service %s", req.Service))
	}
	if ready != nil && ready(ctx) != nil {
		return &grpchealth.CheckResponse{Status: grpchealth.StatusNotServing}, nil
	}
	return &grpchealth.CheckResponse{Status: grpchealth.StatusServing}, nil
}
