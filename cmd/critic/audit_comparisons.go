package main

import (
	"fmt"
	"io"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/comparisons"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/rewardmodels"
)

// auditComparison prints a reviewed-comparison pair's provenance and checks
// that the pair is what the recorded verdict says.
func auditComparison(out io.Writer, comps map[string]events.ComparisonReviewedV1, pairNo int, p rewardmodels.DatasetPair) []string {
	var problems []string
	for _, id := range p.ComparisonIDs {
		c, ok := comps[id]
		if !ok {
			problems = append(problems, fmt.Sprintf("pair %d: comparison %s is not in the log", pairNo, id))
			continue
		}
		fmt.Fprintf(out, "  comparison %s by reviewer %s on step %d of trace %s revision %d: left %s, right %s, chose %s (%s)\n",
			c.ComparisonID, c.ReviewerID, c.StepIndex, c.TraceID, c.TraceRevision, c.Left.Kind, c.Right.Kind, c.Choice, c.Preferred)
		if c.Source == events.ComparisonFromModels {
			fmt.Fprintf(out, "    preferred actions of models %s and %s for context %s (trace %s step %s against trace %s step %s)\n",
				c.ModelID, c.OtherModelID, c.ContextID, c.Left.TraceID, c.Left.StepID, c.Right.TraceID, c.Right.StepID)
		} else {
			fmt.Fprintf(out, "    alternative from finding %s of model %s attempt %d\n", c.FindingID, c.ModelID, c.Attempt)
		}
		// The pair is the verdict's winner over its loser, rendered as
		// input version 1 or 3 would.
		chosen, rejected, ok := comparisons.Pair(c)
		win, lose := c.Left.Action, c.Right.Action
		if c.Choice == events.ChoiceRight {
			win, lose = lose, win
		}
		v3 := p.Chosen == domain.V3Sections(c.Context, win) && p.Rejected == domain.V3Sections(c.Context, lose)
		if !ok || !(v3 || (p.Chosen == chosen && p.Rejected == rejected)) {
			problems = append(problems, fmt.Sprintf("pair %d: the texts are not what comparison %s decided", pairNo, id))
		}
	}
	return problems
}
