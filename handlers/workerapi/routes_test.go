package workerapi_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/handlers/workerapi"
	"github.com/stretchr/testify/require"
)

// recordingMux lists the patterns Register mounts.
type recordingMux struct{ patterns []string }

func (m *recordingMux) HandleFunc(pattern string, _ func(http.ResponseWriter, *http.Request)) {
	m.patterns = append(m.patterns, pattern)
}

// TestServesExactlyTheContractRoutes fails when the worker service mounts a
// route that is not a domain/jobs constant (a literal path written in a
// handler file), or leaves one of the contract's routes unserved.
func TestServesExactlyTheContractRoutes(t *testing.T) {
	t.Parallel()
	var mux recordingMux
	workerapi.New(workerapi.Config{Token: "token"}).Register(&mux)

	var want []string
	for _, r := range jobs.Routes() {
		method, path, ok := strings.Cut(r, " ")
		require.True(t, ok, "route %q has no method", r)
		want = append(want, method+" "+jobs.ServicePrefix+path)
	}
	got := slices.Clone(mux.patterns)
	slices.Sort(got)
	slices.Sort(want)
	require.Equal(t, want, got, "the worker service must serve exactly jobs.Routes()")
	require.Len(t, slices.Compact(got), len(mux.patterns), "a route is registered twice")
}
