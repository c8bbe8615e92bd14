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
	res, err := cmds.ImportTraces.Handle(ctx, commands.ImportTraces{Actor: actor, Input: commands.ImportTracesInput{Format: "stash", Data: []byte(
		`{"id":"u","steps":[{"role":"user","content":"Refund order 1182 please\nthanks"},{"role":"assistant","content":"Done."}]}` + "\n" +
			`{"id":"t","title":"Given","steps":[{"role":"user","content":"hi"}]}`)}})
	require.NoError(t, err)
	untitled, titled := res.TraceIDs[0], res.TraceIDs[1]

	src, err := cmds.Streams.TitleSourceOf(ctx, untitled, 1)
	require.NoError(t, err)
	require.True(t, src.Needed)
	require.Contains(t, src.Input, "user: Refund order 1182 please")
	src, err = cmds.Streams.TitleSourceOf(ctx, titled, 1)
	require.NoError(t, err)
	require.False(t, src.Needed, "an explicit title is never replaced")

	_, err = cmds.RecordTitle.Handle(ctx, commands.RecordTitle{WorkerID: "w", TraceID: untitled, Revision: 1, Title: "  \"Refund for order 1182.\" ", Model: "openai/fast", Usage: []events.LLMUsage{{Model: "openai/fast", Calls: 1}}})
	require.NoError(t, err)
	again, err := cmds.RecordTitle.Handle(ctx, commands.RecordTitle{WorkerID: "w", TraceID: untitled, Revision: 1, Title: "Another", Model: "openai/fast"})
	require.NoError(t, err)
	require.Empty(t, again.LastEventID, "a duplicate job changes nothing")
	src, err = cmds.Streams.TitleSourceOf(ctx, untitled, 1)
	require.NoError(t, err)
	require.False(t, src.Needed)

	// A re-import with new steps derives a title again; a title for the old
	// revision is then stale and dropped.
	_, err = cmds.ImportTraces.Handle(ctx, commands.ImportTraces{Actor: actor, Input: commands.ImportTracesInput{Format: "stash", Data: []byte(
		`{"id":"u","steps":[{"role":"user","content":"Cancel order 7"},{"role":"assistant","content":"Cancelled."}]}`)}})
	require.NoError(t, err)
	stale, err := cmds.RecordTitle.Handle(ctx, commands.RecordTitle{WorkerID: "w", TraceID: untitled, Revision: 1, Title: "Old", Model: "openai/fast"})
	require.NoError(t, err)
	require.Empty(t, stale.LastEventID)
	src, err = cmds.Streams.TitleSourceOf(ctx, untitled, 2)
	require.NoError(t, err)
	require.True(t, src.Needed)
	_, err = cmds.RecordTitle.Handle(ctx, commands.RecordTitle{WorkerID: "w", TraceID: untitled, Revision: 2, Title: "   ", Model: "openai/fast"})
	require.Error(t, err, "an empty title is refused")
}
