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
		jobs.HelloPath():                               jobs.RouteHello,
		jobs.ClaimNextTrainingPath():                   jobs.RouteClaimNextTraining,
		jobs.TrainingPath("m1", "handback"):            jobs.RouteHandBack,
		jobs.TrainingPath("m%2F1", "claim"):            jobs.RouteClaimTraining,
		jobs.TrainingPath("m1", "heartbeat"):           jobs.RouteHeartbeat,
		jobs.TrainingPath("m1", "succeeded"):           jobs.RouteSucceeded,
		jobs.TrainingPath("m1", "failed"):              jobs.RouteFailed,
		jobs.ScoringPath("r1", "claim"):                jobs.RouteClaimScoring,
		jobs.ScoringPath("r1", "finished"):             jobs.RouteScoringFinished,
		jobs.ExtractionPath("m1", "claim"):             jobs.RouteClaimExtraction,
		jobs.ExtractionPath("m1", "progress"):          jobs.RouteExtractionProgress,
		jobs.ExtractionPath("m1", "findings"):          jobs.RouteExtractionFindings,
		jobs.ExtractionPath("m1", "finished"):          jobs.RouteExtractionFinished,
		jobs.ExtractionPath("m1", "handback"):          jobs.RouteExtractionHandBack,
		jobs.TitleSourcePath("t1"):                     jobs.RouteTitleSource,
		jobs.TitleRecordPath("t1"):                     jobs.RouteTitleRecord,
		jobs.GepaPath("g1", "claim"):                   jobs.RouteClaimGepa,
		jobs.GepaPath("g1", "heartbeat"):               jobs.RouteGepaHeartbeat,
		jobs.GepaPath("g1", "candidate"):               jobs.RouteGepaCandidate,
		jobs.GepaPath("g1", "succeeded"):               jobs.RouteGepaSucceeded,
		jobs.GepaPath("g1", "failed"):                  jobs.RouteGepaFailed,
		jobs.ScoringPath("r1", "handback"):             jobs.RouteScoringHandBack,
		jobs.GepaPath("g1", "handback"):                jobs.RouteGepaHandBack,
		jobs.LabelSourcePath("t1"):                     jobs.RouteLabelSource,
		jobs.LabelRecordPath("t1"):                     jobs.RouteLabelRecord,
		jobs.LabelFailedPath("t1"):                     jobs.RouteLabelFailed,
		jobs.AssessSourcePath("t1"):                    jobs.RouteAssessSource,
		jobs.AssessRecordPath("t1"):                    jobs.RouteAssessRecord,
		jobs.QualityCheckSourcePath("t1"):              jobs.RouteQualityCheckSource,
		jobs.QualityCheckRecordPath("t1"):              jobs.RouteQualityCheckRecord,
		jobs.EvaluatorCandidatePath("c1", "claim"):     jobs.RouteClaimEvaluatorCandidate,
		jobs.EvaluatorCandidatePath("c1", "succeeded"): jobs.RouteEvaluatorCandidateSucceeded,
		jobs.EvaluatorCandidatePath("c1", "failed"):    jobs.RouteEvaluatorCandidateFailed,
		jobs.EvaluatorCandidatePath("c1", "handback"):  jobs.RouteEvaluatorCandidateHandBack,
		jobs.EvaluatorCandidatePath("c1", "heartbeat"): jobs.RouteEvaluatorCandidateHeartbeat,
		jobs.EvaluatorScoringPath("t1", "claim"):       jobs.RouteClaimEvaluatorScoring,
		jobs.EvaluatorScoringPath("t1", "scored"):      jobs.RouteEvaluatorScoringScored,
		jobs.EvaluatorScoringPath("t1", "failed"):      jobs.RouteEvaluatorScoringFailed,
	}
	var covered []string
	for path, route := range cases {
		_, pattern := mux.Handler(httptest.NewRequest(http.MethodPost, path, nil))
		method, rel, _ := strings.Cut(route, " ")
		require.Equal(t, method+" "+jobs.ServicePrefix+rel, pattern, "%s lands on the wrong route", path)
		covered = append(covered, route)
	}
	slices.Sort(covered)
	all := jobs.Routes()
	slices.Sort(all)
	require.Equal(t, all, covered, "a route has no URL builder checked here")
}
