package main

import (
	"github.com/criticml/critic/handlers/usecase"
	"net/http"

	"github.com/criticml/critic/domain/evaluator"
	"github.com/criticml/critic/handlers/apiserver"
	"github.com/criticml/critic/handlers/connectapi"
	"github.com/criticml/critic/platform/blob"
)

// registerConnect mounts the Connect services (traces, annotations, reward
// models, query) on the REST port. One handler per service serves the
// Connect, gRPC and gRPC-Web protocols; gRPC reaches it because the server
// also speaks h2c. blobs signs weights downloads, as for REST; workers and
// modelRoots are what the base-model list offers, as for REST.
func registerConnect(mux *http.ServeMux, s *apiserver.Server, maxBody int64, blobs blob.Store, gen usecase.Assessments, evalPolicy evaluator.Policy,
	workers usecase.Workers, modelRoots []string) {
	connectapi.Register(mux, connectapi.Deps{Cmds: s.Cmds, Queries: s.Queries, Waiter: s.Waiter, Auth: s.Auth,
		Blobs: blobs, Query: s.Query, MaxBody: maxBody, Assessments: gen, EvaluatorPolicy: &evalPolicy, Workers: workers, ModelRoots: modelRoots})
}

// assessments is where section summaries and completion estimates come
// from: the worker tier's fast model through the assessment cache, or nil
// (the endpoints answer unavailable naming CRITIC_FAST_MODEL) without one.
func assessments(r llmRoles, s *apiserver.Server) usecase.Assessments {
	if r.Fast == nil {
		return nil
	}
	return usecase.NewGenerator(usecase.Backend{Cmds: s.Cmds, Queries: s.Queries, Waiter: s.Waiter})
}
