package jobs

// Routes is every worker-service route, relative to ServicePrefix: the
// whole surface a worker may call. The worker service registers exactly
// these, and the tests of both sides check that nothing else is served or
// called, so a new job type cannot grow a route outside this package.
func Routes() []string {
	return []string{RouteHello, RouteClaimNext, RouteJob}
}

// Topics is every job topic the dispatch projection publishes and a worker
// consumes.
func Topics() []string {
	return []string{TopicTrain, TopicScore, TopicExtract, TopicTitle, TopicGepa, TopicLabel, TopicAssess, TopicEvaluatorTrain, TopicEvaluatorScore, TopicScoreBatch}
}
