package traces

import "github.com/criticml/critic/domain/events"

// DecideContribution says what setting a trace's consent to contribute
// means: nothing when it already has that value (setting it twice is not two
// facts), else one trace.contribution_set event. The caller has checked the
// trace exists and belongs to the actor.
func DecideContribution(s State, contribute bool, via string) (events.TraceContributionSetV1, bool) {
	if s.Contribute == contribute {
		return events.TraceContributionSetV1{}, false
	}
	return events.TraceContributionSetV1{TraceID: s.ID, Contribute: contribute, Revision: s.Revision, Via: via}, true
}

// ContributionNotice is what a person is told about a trace's consent, in
// the words spec 002 uses: opting in covers corrections, step ratings and
// reviewed comparisons; opting out cannot make released weights unlearn.
func ContributionNotice(contribute bool) string {
	if contribute {
		return "This trace's corrections, step ratings and reviewed comparisons may train future shared evaluator candidates. Scoring never contributes data."
	}
	return "This trace is excluded from every future shared evaluator candidate. Weights already released cannot unlearn data they were trained on."
}
