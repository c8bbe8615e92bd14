package jobs_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/criticml/critic/domain/jobs"
	"github.com/stretchr/testify/require"
)

// TestEveryRouteConstantIsListed parses this package and fails when a
// Route* or Topic* constant is declared but missing from Routes or Topics,
// the lists both sides' contract tests check against.
func TestEveryRouteConstantIsListed(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	require.NoError(t, err)
	values := map[string]string{}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING && n.IsExported() {
						values[n.Name] = strings.Trim(lit.Value, `"`)
					}
				}
			}
		}
	}
	routes, topics := 0, 0
	for name, v := range values {
		switch {
		case strings.HasPrefix(name, "Route"):
			routes++
			require.Contains(t, jobs.Routes(), v, "%s is not in jobs.Routes()", name)
		case strings.HasPrefix(name, "Topic"):
			topics++
			require.Contains(t, jobs.Topics(), v, "%s is not in jobs.Topics()", name)
		}
	}
	require.Equal(t, routes, len(jobs.Routes()), "jobs.Routes() lists a route twice or one that is no constant")
	require.Equal(t, topics, len(jobs.Topics()), "jobs.Topics() lists a topic twice or one that is no constant")
}

// TestPathBuildersHitTheirRoutes serves jobs.Routes() on a real ServeMux and
// checks that every URL builder a worker calls lands on the route it is
// meant for, so a builder and its pattern cannot drift apart.
func TestPathBuildersHitTheirRoutes(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	for _, r := range jobs.Routes() {
		method, path, _ := strings.Cut(r, " ")
		mux.HandleFunc(method+" "+jobs.ServicePrefix+path, func(http.ResponseWriter, *http.Request) {})
	}
	cases := map[string]string{
		jobs.HelloPath():                                jobs.RouteHello,
		jobs.ClaimNextPath(jobs.KindTrain):              jobs.RouteClaimNext,
		jobs.JobPath(jobs.KindTrain, "m/1", jobs.Claim): jobs.RouteJob,
	}
	for _, k := range jobs.Kinds() {
		for _, action := range []string{jobs.Claim, jobs.Beat, jobs.Report, jobs.Finish, jobs.Fail, jobs.HandBack} {
			cases[jobs.JobPath(k, "x1", action)] = jobs.RouteJob
		}
	}
	var covered []string
	for path, route := range cases {
		_, pattern := mux.Handler(httptest.NewRequest(http.MethodPost, path, nil))
		method, rel, _ := strings.Cut(route, " ")
		require.Equal(t, method+" "+jobs.ServicePrefix+rel, pattern, "%s lands on the wrong route", path)
		covered = append(covered, route)
	}
	slices.Sort(covered)
	covered = slices.Compact(covered)
	all := jobs.Routes()
	slices.Sort(all)
	require.Equal(t, all, covered, "a route has no URL builder checked here")
}
