package connectapi_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/handlers/rest"
)

// readsByPost are the REST writes-by-method that only read: a query runs one
// read-only SELECT. Everything else a read-only key sends with POST, PUT,
// PATCH or DELETE must be refused before it has any effect.
var readsByPost = map[string]bool{
	"POST /api/v1/rm/query": true,
	// OTLP ingest is refused to read-only keys by its own receiver (not
	// mounted in this test server).
	"POST /api/v1/rm/otel/v1/traces": true,
}

// TestReadOnlyKeyCannotWriteAnyRoute audits every mutating operation in the
// OpenAPI document: a read-only key gets 403 forbidden, whatever the body
// (the role is checked before the body is read), on an existing trace.
func TestReadOnlyKeyCannotWriteAnyRoute(t *testing.T) {
	e := start(t)
	refund, _ := e.importTwo(t, e.alice)
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(rest.OpenAPI, &doc))
	param := regexp.MustCompile(`\{[a-z_]+\}`)
	checked := 0
	for path, ops := range doc.Paths {
		for method := range ops {
			m := strings.ToUpper(method)
			if m != http.MethodPost && m != http.MethodPut && m != http.MethodPatch && m != http.MethodDelete {
				continue
			}
			if readsByPost[m+" "+path] {
				continue
			}
			concrete := param.ReplaceAllStringFunc(path, func(p string) string {
				if p == "{trace_id}" {
					return refund.Summary.Id
				}
				return "x"
			})
			rel, ok := strings.CutPrefix(concrete, "/api/v1/rm")
			require.True(t, ok || strings.HasPrefix(concrete, "/api/v1/"), concrete)
			var status int
			var body []byte
			if ok {
				status, body = e.rest(t, m, rel, e.aliceRO, map[string]any{})
			} else {
				req, err := http.NewRequest(m, e.url+concrete, strings.NewReader("{}"))
				require.NoError(t, err)
				req.Header.Set("Authorization", "Bearer "+e.aliceRO)
				res, err := http.DefaultClient.Do(req)
				require.NoError(t, err)
				_ = res.Body.Close()
				status = res.StatusCode
			}
			require.Equal(t, http.StatusForbidden, status, "%s %s: %s", m, path, body)
			checked++
		}
	}
	require.GreaterOrEqual(t, checked, 15)
}
