package jobs

// Routes is every worker-service route, relative to ServicePrefix: the
// whole surface a worker may call. The worker service registers exactly
// these, and the tests of both sides check that nothing else is served or
// called, so a new job type cannot grow a route outside this package.
func Routes() []string {
	return []string{RouteHello, RouteClaimNext, RouteJob}
}

// Topics is every job topic the dispatch projection publishes and a worker
// consumes: the registered kinds' (Kinds).
func Topics() []string {
	var out []string
	for _, r := range registered {
		if r.topic != "" {
			out = append(out, r.topic)
		}
	}
	return out
}
