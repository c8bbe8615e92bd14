package domain_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain"
)

func TestRenderVersion3Sections(t *testing.T) {
	t.Parallel()
	steps := []domain.PairStep{
		{Role: domain.RoleSystem, Content: "be nice"},
		{Role: domain.RoleUser, Content: "Refund 1182"},
		{Role: domain.RoleAssistant, ToolName: "lookup", ToolInput: map[string]any{"id": "1182"}},
		{Role: domain.RoleTool, Content: "delivered"},
		{Role: domain.RoleAssistant, Content: "Refunded."},
	}
	require.Equal(t, domain.RenderUpTo(steps, 2), domain.RenderVersion(1, steps, 2, false), "version 1 is unchanged")
	require.Equal(t, "### Context\nuser: Refund 1182\n### Action\nassistant: [tool_call] lookup({\"id\":\"1182\"})", domain.RenderVersion(3, steps, 2, false))
	require.Equal(t, "### Conversation\n"+domain.RenderTrace(steps), domain.RenderVersion(3, steps, 4, true))

	// Pairs render in the request's version too.
	one := 1
	pairs := domain.BuildPairsRendered([]domain.PairTrace{{ID: "t", Steps: []domain.PairStep{
		{ID: "u", Role: domain.RoleUser, Content: "q"}, {ID: "a", Role: domain.RoleAssistant, Content: "good"}, {ID: "b", Role: domain.RoleAssistant, Content: "bad"}}}},
		[]domain.Rating{{AnnotationID: "1", TraceID: "t", StepID: "a", Rating: one}, {AnnotationID: "2", TraceID: "t", StepID: "b", Rating: -one}}, 10, 3)
	require.Len(t, pairs, 1)
	require.Equal(t, "### Context\nuser: q\n### Action\nassistant: good", pairs[0].Chosen)
	require.Equal(t, "### Context\nuser: q\nassistant: good\n### Action\nassistant: bad", pairs[0].Rejected)
}
