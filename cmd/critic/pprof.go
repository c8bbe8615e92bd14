package main

import (
	"net/http"
	"net/http/pprof"
)

// registerPProf serves Go's profiler. It is off by default and
// unauthenticated, so it exists only for profiling a local instance
// (CRITIC_PPROF=1), e.g. while running the benchmarks.
func registerPProf(mux *http.ServeMux) {
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
}
