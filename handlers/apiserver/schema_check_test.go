package apiserver_test

import (
	"bytes"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/handlers/rest"
)

// requireSchema validates a response body against a component schema of
// the published OpenAPI document (draft 2020-12, as OpenAPI 3.1 uses),
// so a field the document does not declare (additionalProperties: false)
// or a wrong type fails the test.
func requireSchema(t *testing.T, component string, body []byte) {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(rest.OpenAPI))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource("mem://openapi.json", doc))
	s, err := c.Compile("mem://openapi.json#/components/schemas/" + component)
	require.NoError(t, err)
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	require.NoError(t, err)
	require.NoError(t, s.Validate(v), "the response must match the OpenAPI schema %s: %s", component, body)
}
