package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// defaultPProfAddr is where CRITIC_PPROF=1 (the older switch) serves.
const defaultPProfAddr = "127.0.0.1:6060"

// pprofMux is Go's profiler. It is never mounted on the API's mux: profiles
// expose memory contents and symbol names and cost CPU on demand, so they are
// served only on their own loopback-only listener (CRITIC_PPROF_ADDR), never
// next to the authenticated API on a port the world may reach.
func pprofMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	return mux
}

// checkLoopback refuses a profiler address that is not a loopback IP:
// "localhost" is refused too, since what it resolves to is the host's
// configuration, not ours.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port", addr)
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%q must be a loopback IP address (127.0.0.1:PORT or [::1]:PORT): the profiler is unauthenticated", addr)
	}
	return nil
}

// startPProf listens on addr (a loopback address, checked again here so no
// caller can skip it) and serves the profiler until the returned server is
// shut down. Profiles take as long as asked (?seconds=), so there is no
// write timeout; the header timeout still bounds idle clients.
func startPProf(addr string) (*http.Server, string, error) {
	if err := checkLoopback(addr); err != nil {
		return nil, "", fmt.Errorf("CRITIC_PPROF_ADDR: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("CRITIC_PPROF_ADDR %s: %w", addr, err)
	}
	srv := &http.Server{Handler: pprofMux(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Println("pprof server stopped:", err)
		}
	}()
	return srv, ln.Addr().String(), nil
}
