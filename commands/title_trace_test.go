package commands_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain/events"
)

func TestTitlesReplaceOnlyTheDerivedTitleOfTheCurrentRevision(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cmds, _, actor := setup(t)
	res, err := cmds.ImportTraces(ctx, actor, commands.ImportTraces{Format: "stash", Data: []byte(
		`{"id":"u","steps":[{"role":"user","content":"Refund order 1182 please\nthanks"},{"role":"assistant","content":"Done."}]}` + "\n" +
			`{"id":"t","title":"Given","steps":[{"role":"user","content":"hi"}]}`)})
	require.NoError(t, err)
	untitled, titled := res.TraceIDs[0], res.TraceIDs[1]

	src, err := cmds.TitleSourceOf(ctx, untitled, 1)
	require.NoError(t, err)
	require.True(t, src.Needed)
	require.Contains(t, src.Input, "user: Refund order 1182 please")
	src, err = cmds.TitleSourceOf(ctx, titled, 1)
	require.NoError(t, err)
	require.False(t, src.Needed, "an explicit title is never replaced")

	_, err = cmds.RecordTitle(ctx, "w", untitled, 1, "  \"Refund for order 1182.\" ", "openai/fast", []events.LLMUsage{{Model: "openai/fast", Calls: 1}})
	require.NoError(t, err)
	again, err := cmds.RecordTitle(ctx, "w", untitled, 1, "Another", "openai/fast", nil)
	require.NoError(t, err)
	require.Empty(t, again.LastEventID, "a duplicate job changes nothing")
	src, err = cmds.TitleSourceOf(ctx, untitled, 1)
	require.NoError(t, err)
	require.False(t, src.Needed)

	// A re-import with new steps derives a title again; a title for the old
	// revision is then stale and dropped.
	_, err = cmds.ImportTraces(ctx, actor, commands.ImportTraces{Format: "stash", Data: []byte(
		`{"id":"u","steps":[{"role":"user","content":"Cancel order 7"},{"role":"assistant","content":"Cancelled."}]}`)})
	require.NoError(t, err)
	stale, err := cmds.RecordTitle(ctx, "w", untitled, 1, "Old", "openai/fast", nil)
	require.NoError(t, err)
	require.Empty(t, stale.LastEventID)
	src, err = cmds.TitleSourceOf(ctx, untitled, 2)
	require.NoError(t, err)
	require.True(t, src.Needed)
	_, err = cmds.RecordTitle(ctx, "w", untitled, 2, "   ", "openai/fast", nil)
	require.Error(t, err, "an empty title is refused")
}
