package connectapi

import (
	"context"
	"encoding/json"
	"fmt"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/handlers/edge"
	criticv1 "github.com/criticml/critic/schema/gen/critic/v1"
)

// QueryService implements critic.v1.QueryService over the snapshots REST's
// POST /query reads.
type QueryService struct{ d edge.Deps }

// Query runs read-only SQL over the caller's snapshot; read-only keys may
// query. An empty sql is an absent one, as proto3 cannot tell them apart.
func (s *QueryService) Query(ctx context.Context, req *connect.Request[criticv1.QueryRequest]) (*connect.Response[criticv1.QueryResponse], error) {
	if req.Msg.Sql == "" {
		return nil, domain.InvalidField("sql", "sql is required")
	}
	res, err := s.d.Query.Run(ctx, edge.CallerFrom(ctx).UserID, req.Msg.Sql)
	if err != nil {
		return nil, err
	}
	rows, err := rowsToProto(res.Rows)
	return reply(&criticv1.QueryResponse{Columns: res.Columns, Rows: rows, Truncated: res.Truncated}, err)
}

// rowsToProto converts the rows through the JSON REST writes, so both APIs
// answer the same values (times as REST formats them, numbers as doubles).
func rowsToProto(rows [][]any) ([]*structpb.ListValue, error) {
	out := make([]*structpb.ListValue, len(rows))
	for i, row := range rows {
		b, err := json.Marshal(row)
		if err != nil {
			return nil, fmt.Errorf("query row %d: %w", i, err)
		}
		l := &structpb.ListValue{}
		if err := fromRESTJSON.Unmarshal(b, l); err != nil {
			return nil, fmt.Errorf("query row %d: %w", i, err)
		}
		out[i] = l
	}
	return out, nil
}
