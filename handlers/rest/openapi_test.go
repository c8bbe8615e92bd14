package rest_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/handlers/edge"
	"github.com/criticml/critic/handlers/otlp"
	"github.com/criticml/critic/handlers/rest"
)

// recorder is a mux that only remembers patterns.
type recorder struct{ patterns []string }

func (r *recorder) Handle(pattern string, _ http.Handler) { r.patterns = append(r.patterns, pattern) }

type openAPIDoc struct {
	OpenAPI    string                                `json:"openapi"`
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		Schemas map[string]json.RawMessage `json:"schemas"`
	} `json:"components"`
}

// TestOpenAPICoversEveryRoute: every method+path the REST surfaces register
// (the API, /query, the OTLP receiver) has an operation in the OpenAPI
// document, with the same path parameters, and the document lists no
// operation that no handler serves. A route added without documenting it,
// or a documented route removed, fails here.
func TestOpenAPICoversEveryRoute(t *testing.T) {
	t.Parallel()
	var doc openAPIDoc
	require.NoError(t, json.Unmarshal(rest.OpenAPI, &doc))
	require.Equal(t, "3.1.0", doc.OpenAPI)

	mux := &recorder{}
	rest.New(edge.Deps{}).Register(mux)
	rest.New(edge.Deps{}).RegisterQuery(mux)
	otlp.NewReceiver(edge.Deps{}).Register(mux)

	served := map[string]bool{}
	for _, p := range mux.patterns {
		method, path, ok := strings.Cut(p, " ")
		if !ok {
			require.Equal(t, rest.Prefix+"/", p, "only the 404 catch-all has no method")
			continue
		}
		served[strings.ToLower(method)+" "+path] = true
	}
	require.Greater(t, len(served), 20)
	documented := map[string]bool{}
	for path, item := range doc.Paths {
		for method := range item {
			if method == "parameters" {
				continue
			}
			documented[method+" "+path] = true
		}
	}
	var missing, extra []string
	for k := range served {
		if !documented[k] {
			missing = append(missing, k)
		}
	}
	for k := range documented {
		if !served[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	require.Empty(t, missing, "routes served but not in handlers/rest/openapi.json")
	require.Empty(t, extra, "operations in openapi.json that no handler serves")

	// Every $ref resolves.
	refs := regexp.MustCompile(`"\$ref":\s*"#/components/schemas/([A-Za-z]+)"`).FindAllSubmatch(rest.OpenAPI, -1)
	require.NotEmpty(t, refs)
	for _, m := range refs {
		require.Contains(t, doc.Components.Schemas, string(m[1]))
	}
}

// TestOpenAPIServedWithoutKey: clients fetch the document before they have
// a key.
func TestOpenAPIServedWithoutKey(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	rest.New(edge.Deps{}).Register(mux)
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, rest.OpenAPIPath, nil))
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	require.JSONEq(t, string(rest.OpenAPI), rec.Body.String())
}

// TestOpenAPIWritesTakeIdempotencyKey: every POST, PATCH, PUT and DELETE
// documents the Idempotency-Key header (handlers/idempotency serves it on
// all of them), through the one reusable parameter.
func TestOpenAPIWritesTakeIdempotencyKey(t *testing.T) {
	t.Parallel()
	var doc struct {
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Parameters map[string]struct {
				Name string `json:"name"`
				In   string `json:"in"`
			} `json:"parameters"`
		} `json:"components"`
	}
	require.NoError(t, json.Unmarshal(rest.OpenAPI, &doc))
	p := doc.Components.Parameters["IdempotencyKey"]
	require.Equal(t, "Idempotency-Key", p.Name)
	require.Equal(t, "header", p.In)
	writes := map[string]int{}
	for path, item := range doc.Paths {
		for method, raw := range item {
			if method != "post" && method != "patch" && method != "put" && method != "delete" {
				continue
			}
			var op struct {
				Parameters []struct {
					Ref string `json:"$ref"`
				} `json:"parameters"`
				Security *[]any `json:"security"`
			}
			require.NoError(t, json.Unmarshal(raw, &op))
			if op.Security != nil && len(*op.Security) == 0 {
				continue // unauthenticated (a one-time sign-in link): replays are keyed by account, it has none
			}
			writes[method]++
			var refs []string
			for _, prm := range op.Parameters {
				refs = append(refs, prm.Ref)
			}
			require.Contains(t, refs, "#/components/parameters/IdempotencyKey", "%s %s", strings.ToUpper(method), path)
		}
	}
	require.Greater(t, writes["post"], 10)
	require.Positive(t, writes["patch"])
	require.Positive(t, writes["put"])
	require.Positive(t, writes["delete"])
}
