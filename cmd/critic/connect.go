package main

import (
	"net/http"

	"github.com/criticml/critic/domain/evaluator"
	"github.com/criticml/critic/handlers/apiserver"
	"github.com/criticml/critic/handlers/connectapi"
	"github.com/criticml/critic/platform/blob"
)

// registerConnect mounts the Connect services (traces, annotations, reward
// models, query) on the REST port. One handler per service serves the
// Connect, gRPC and gRPC-Web protocols; gRPC reaches it because the server
// also speaks h2c. blobs signs weights downloads, as for REST.
func registerConnect(mux *http.ServeMux, s *apiserver.Server, maxBody int64, blobs blob.Store, evalPolicy evaluator.Policy) {
	connectapi.Register(mux, connectapi.Deps{Cmds: s.Cmds, Queries: s.Queries, Waiter: s.Waiter, Auth: s.Auth,
		Blobs: blobs, Snapshots: s.Snapshots, MaxBody: maxBody, EvaluatorPolicy: &evalPolicy})
}
