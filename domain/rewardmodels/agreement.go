package rewardmodels

import (
	"github.com/criticml/critic/domain/agreement"
	"github.com/criticml/critic/domain/events"
)

// TrainingAgreementOf measures the member labels a dataset is built from
// (issue 36): the selected traces' ratings — or the values of the
// criterion the model trains on — by member, with the same dispute rule
// training_config.exclude_disputed applies (withoutDisputed), so the
// learning report's excluded count is what training left out. Nil for a
// model that learns from the automatic annotation alone.
func TrainingAgreementOf(in DatasetInputs) *events.DatasetAgreement {
	if in.Config.AnnotationSource == events.SourceAutomatic {
		return nil
	}
	out := &events.DatasetAgreement{}
	var all []agreement.Judgment
	for _, s := range in.Selected {
		rs := in.ratingsOf(s)
		member := map[string]string{}
		for _, a := range s.Annotations {
			member[a.ID] = a.AuthorID
		}
		judged, adjudicated := map[string]bool{}, map[string]bool{}
		var js []agreement.Judgment
		for _, r := range rs {
			switch {
			case r.Adjudicated:
				adjudicated[r.StepID] = true
			case !r.LabelError:
				judged[r.StepID] = true
				js = append(js, agreement.Judgment{Target: s.ID + "/" + r.StepID, Member: member[r.AnnotationID], Value: float64(r.Rating)})
			}
		}
		out.Judged += len(judged)
		out.Adjudicated += len(adjudicated)
		for _, d := range agreement.Disputed(js) {
			out.Disputed++
			if in.Config.ExcludeDisputed && !adjudicated[d.Target[len(s.ID)+1:]] {
				out.Excluded++
			}
		}
		all = append(all, js...)
	}
	out.Alpha = agreement.Alpha(all, agreement.Interval)
	out.CoRated = out.Alpha.N
	return out
}
