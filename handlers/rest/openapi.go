package rest

import (
	_ "embed"
	"net/http"
)

// OpenAPIPath is where the API describes itself.
const OpenAPIPath = Prefix + "/openapi.json"

// OpenAPI is the OpenAPI 3.1 document of every REST route and shape. It is
// written by hand next to the handlers; TestOpenAPICoversEveryRoute fails
// when a route is missing from it, and the browser tests validate every
// response they see against it, so a drifting handler fails a test. The web
// app's TypeScript types are generated from it (web/src/api/schema.d.ts).
//
//go:embed openapi.json
var OpenAPI []byte

// Mux is what Register needs of an http.ServeMux; tests pass a recorder to
// list the routes.
type Mux interface {
	Handle(pattern string, handler http.Handler)
}

// serveOpenAPI answers the document without authentication: it describes
// the API, holds no data, and clients fetch it before they have a key.
func serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(OpenAPI)
}
