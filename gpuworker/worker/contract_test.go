package worker

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain/jobs"
)

// TestCallsOnlyContractPaths reads this package's source and fails when a
// call to the worker service (Client.post) builds its path any other way
// than with a domain/jobs path function, or when a string literal names a
// worker-service URL: the paths a worker calls are written once, in
// domain/jobs, next to the routes the API serves.
func TestCallsOnlyContractPaths(t *testing.T) {
	t.Parallel()
	names, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	posts := 0
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				if n.Kind == token.STRING {
					s, _ := strconv.Unquote(n.Value)
					require.NotContains(t, s, jobs.ServicePrefix, "%s: a worker-service path written outside domain/jobs", fset.Position(n.Pos()))
				}
			case *ast.CallExpr:
				sel, ok := n.Fun.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "post" || len(n.Args) < 2 {
					return true
				}
				if _, isClient := sel.X.(*ast.Ident); !isClient {
					if inner, ok := sel.X.(*ast.SelectorExpr); !ok || inner.Sel.Name != "client" {
						return true
					}
				}
				posts++
				call, ok := n.Args[1].(*ast.CallExpr)
				var fn *ast.SelectorExpr
				if ok {
					fn, ok = call.Fun.(*ast.SelectorExpr)
				}
				var pkg *ast.Ident
				if ok {
					pkg, ok = fn.X.(*ast.Ident)
				}
				require.True(t, ok && pkg.Name == "jobs" && strings.HasSuffix(fn.Sel.Name, "Path"),
					"%s: the path of a worker-service call must come from a domain/jobs …Path function", fset.Position(n.Args[1].Pos()))
			}
			return true
		})
	}
	require.GreaterOrEqual(t, posts, 3, "the scan found too few worker-service calls: is it still looking at the right code?")
}

// TestClientCallsServedRoutes runs every Client method against a server
// that serves only jobs.Routes(): a method calling a path outside the
// contract gets a 404 here, and every route the client covers is hit.
func TestClientCallsServedRoutes(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var hit, stray []string
	mux := http.NewServeMux()
	for _, r := range jobs.Routes() {
		method, path, _ := strings.Cut(r, " ")
		mux.HandleFunc(method+" "+jobs.ServicePrefix+path, func(w http.ResponseWriter, req *http.Request) {
			mu.Lock()
			hit = append(hit, r)
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{}`))
		})
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, req *http.Request) {
		mu.Lock()
		stray = append(stray, req.Method+" "+req.URL.Path)
		mu.Unlock()
		http.NotFound(w, req)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	c := NewClient(srv.URL, "token", "w1")
	ctx := context.Background()

	_, err := c.Hello(ctx)
	require.NoError(t, err)
	_, err = c.ClaimNextTraining(ctx, "worker")
	require.NoError(t, err)
	for _, k := range jobs.Kinds() {
		for _, action := range []string{jobs.Claim, jobs.Beat, jobs.Report, jobs.Finish, jobs.Fail, jobs.HandBack} {
			require.NoError(t, c.Job(ctx, k, "m/1", action, jobs.Call{}, nil))
		}
	}

	require.Empty(t, stray, "the client called paths the worker service does not serve")
	want := jobs.Routes()
	slices.Sort(want)
	slices.Sort(hit)
	require.Equal(t, want, slices.Compact(hit))
}

// TestImportsNoAPICode fails when the worker, directly or through any
// dependency, imports the API's code (commands, handlers, projections, the
// event store or database packages): a worker holds a worker token and
// blob access, never the API's internals, and shares only domain/jobs.
func TestImportsNoAPICode(t *testing.T) {
	t.Parallel()
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	out, err := exec.Command(gobin, "list", "-deps", ".").Output()
	require.NoError(t, err)
	const module = "github.com/criticml/critic/"
	var own []string
	for pkg := range strings.FieldsSeq(string(out)) {
		rel, ok := strings.CutPrefix(pkg, module)
		if !ok {
			continue
		}
		own = append(own, rel)
		for _, banned := range []string{"commands", "handlers", "projections", "readmodel", "platform/pg", "platform/eventstore", "cmd"} {
			require.False(t, rel == banned || strings.HasPrefix(rel, banned+"/"), "the worker depends on %s, which is API code", rel)
		}
	}
	require.Contains(t, own, "domain/jobs", "the worker speaks the contract in domain/jobs")
}

// TestHandlesEveryJobTopic fails when domain/jobs gains a job topic no
// worker handler runs (Run refuses to start then too), or the worker
// handles a topic outside the contract.
func TestHandlesEveryJobTopic(t *testing.T) {
	t.Parallel()
	var handled []string
	for _, topic := range jobs.Topics() {
		if (&Worker{}).Handle(topic) != nil {
			handled = append(handled, topic)
		}
	}
	want := jobs.Topics()
	slices.Sort(handled)
	slices.Sort(want)
	require.Equal(t, want, handled)
}
