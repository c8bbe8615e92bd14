package connectapi

import (
	"context"

	"connectrpc.com/connect"

	"github.com/criticml/critic/handlers/edge"
	"github.com/criticml/critic/handlers/usecase"
	criticv1 "github.com/criticml/critic/schema/gen/critic/v1"
)

// BaseModelService implements critic.v1.BaseModelService with the use case
// GET /base-models calls, so both list the same bases.
type BaseModelService struct{ d edge.Deps }

// ListBaseModels is GET /base-models.
func (s *BaseModelService) ListBaseModels(context.Context, *connect.Request[criticv1.ListBaseModelsRequest]) (*connect.Response[criticv1.ListBaseModelsResponse], error) {
	l := usecase.BaseModels(s.d.Workers, s.d.ModelRoots)
	out := &criticv1.ListBaseModelsResponse{Hint: l.Hint, Compute: &criticv1.BaseModelCompute{Workers: int32(l.Compute.Workers),
		GpuWorkers: int32(l.Compute.GPUWorkers), Device: l.Compute.Device}}
	for _, b := range l.Bases {
		out.Bases = append(out.Bases, &criticv1.BaseModel{Id: b.ID, Name: b.Name, Source: b.Source, Reachable: b.Reachable, Default: b.Default,
			Params: b.Params, SizeBytes: b.SizeBytes, SecondsPerPair: b.SecondsPerPair})
	}
	return connect.NewResponse(out), nil
}
