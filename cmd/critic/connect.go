package main

import (
	"net/http"

	"github.com/criticml/critic/handlers/app"
	"github.com/criticml/critic/handlers/connectapi"
)

// registerConnect mounts the Connect services on the REST port. One handler
// serves the Connect, gRPC and gRPC-Web protocols; gRPC reaches it because
// the server also speaks h2c.
func registerConnect(mux *http.ServeMux, s *app.Server, maxBody int64) {
	connectapi.New(s.Cmds, s.Queries, s.Waiter, s.Auth, maxBody).Register(mux)
}
