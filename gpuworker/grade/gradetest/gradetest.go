// Package gradetest scripts the grading model on the llmtest server: a
// reply that answers whatever quality check a call names with a fixed
// distribution per question, so tests of the grader, the worker and the
// whole stack share one scripted model whose numbers they can compute.
package gradetest

import (
	"regexp"

	"github.com/criticml/critic/domain/stepscores"
	"github.com/criticml/critic/platform/llm/llmtest"
)

var target = regexp.MustCompile(`Quality check of the chunk with id "([^"]+)" \(question ([a-z_0-9]+)\)`)

// Target is the chunk id and question a grading request names ("" when the
// request is not a quality check).
func Target(r llmtest.Request) (id, question string) {
	m := target.FindStringSubmatch(r.Last())
	if m == nil {
		return "", ""
	}
	return m[1], m[2]
}

// Answers are the distributions Reply gives, by question.
var Answers = map[string]map[string]float64{
	stepscores.QuestionWork:   {"advanced": 0.7, "unneeded": 0.2, "misdirected": 0.1, "harmful": 0},
	stepscores.QuestionAnswer: {"solves": 0.6, "partly": 0.3, "does_not": 0.1, "wrong": 0},
}

// Reply answers the quality check r names with Answers; a request that is
// not a quality check gets a 400.
func Reply(r llmtest.Request) llmtest.Reply {
	id, q := Target(r)
	p, ok := Answers[q]
	if id == "" || !ok {
		return llmtest.Status(400)
	}
	return llmtest.JSON(map[string]any{"chunk_id": id, "probabilities": p})
}
