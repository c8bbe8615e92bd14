package jobs

// Routes is every worker-service route, relative to ServicePrefix: the
// whole surface a worker may call. The worker service registers exactly
// these, and the tests of both sides check that nothing else is served or
// called, so a new job type cannot grow a route outside this package.
func Routes() []string {
	return []string{
		RouteHello, RouteClaimNextTraining, RouteHandBack,
		RouteClaimTraining, RouteHeartbeat, RouteSucceeded, RouteFailed,
		RouteClaimScoring, RouteScoringFinished, RouteScoringHandBack,
		RouteClaimExtraction, RouteExtractionProgress, RouteExtractionFindings, RouteExtractionFinished, RouteExtractionHandBack,
		RouteTitleSource, RouteTitleRecord,
		RouteClaimGepa, RouteGepaHeartbeat, RouteGepaCandidate, RouteGepaSucceeded, RouteGepaFailed, RouteGepaHandBack,
		RouteLabelSource, RouteLabelRecord, RouteLabelFailed,
		RouteAssessSource, RouteAssessRecord,
		RouteQualityCheckSource, RouteQualityCheckRecord,
		RouteClaimEvaluatorCandidate, RouteEvaluatorCandidateSucceeded, RouteEvaluatorCandidateFailed, RouteEvaluatorCandidateHandBack,
		RouteEvaluatorCandidateHeartbeat,
		RouteClaimEvaluatorScoring, RouteEvaluatorScoringScored, RouteEvaluatorScoringFailed,
	}
}

// Topics is every job topic the dispatch projection publishes and a worker
// consumes.
func Topics() []string {
	return []string{TopicTrain, TopicScore, TopicExtract, TopicTitle, TopicGepa, TopicLabel, TopicAssess, TopicEvaluatorTrain, TopicEvaluatorScore}
}
