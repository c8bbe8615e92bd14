package readmodel_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/projections/readmodel"
)

// TestListTracesSearchAndSort is the web app's search box and sortable
// source column: ?q matches titles and step content case-insensitively
// (with LIKE's wildcards taken literally), only the owner's traces, and
// ?sort orders by the displayed source name.
func TestListTracesSearchAndSort(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, blobs, store, cmds := newLog(t)
	u, err := cmds.CreateUser.Handle(ctx, commands.CreateUser{Name: "searcher"})
	require.NoError(t, err)
	other, err := cmds.CreateUser.Handle(ctx, commands.CreateUser{Name: "other"})
	require.NoError(t, err)
	actor := commands.Actor{UserID: u.UserID}
	imp := func(source, data string) []string {
		res, err := cmds.ImportTraces.Handle(ctx, commands.ImportTraces{Actor: actor, Input: commands.ImportTracesInput{Format: "stash", Data: []byte(data), SourceID: source}})
		require.NoError(t, err)
		return res.TraceIDs
	}
	refund := imp("zeta", `{"title":"Refund for order 1182","steps":[{"role":"user","content":"money back please"},{"role":"assistant","content":"ok"}]}`)[0]
	deploy := imp("alpha", `{"title":"Deploy the site","steps":[{"role":"user","content":"ship it"},{"role":"assistant","content":"Ran 100% of the TESTS_ok"},`+
		`{"role":"assistant","content":"","tool_name":"run_shell","tool_input":{"command":"kubectl rollout restart web"},"tool_call_id":"c1"}]}`)[0]
	_, err = cmds.ImportTraces.Handle(ctx, commands.ImportTraces{Actor: commands.Actor{UserID: other.UserID}, Input: commands.ImportTracesInput{Format: "stash",
		Data: []byte(`{"title":"Refund elsewhere","steps":[{"role":"user","content":"refund"}]}`)}})
	require.NoError(t, err)
	_, err = cmds.RenameTraceSource.Handle(ctx, commands.RenameTraceSource{Actor: actor, SourceID: "zeta", Name: "Aardvark bot"})
	require.NoError(t, err)

	all, err := store.ReadAfter(ctx, 0, 1000)
	require.NoError(t, err)
	require.NoError(t, readmodel.New(pool, blobs, slog.New(slog.NewTextHandler(io.Discard, nil))).Apply(ctx, all))
	q := readmodel.NewQueries(pool)

	ids := func(f readmodel.ListFilter) ([]string, int) {
		f.Limit = 50
		traces, total, err := q.ListTraces(ctx, u.UserID, f)
		require.NoError(t, err)
		out := []string{}
		for _, tr := range traces {
			out = append(out, tr.ID)
		}
		return out, total
	}
	for query, want := range map[string][]string{
		"REFUND":     {refund},         // title, any case
		"money back": {refund},         // step content
		"tests_ok":   {deploy},         // underscore is not a wildcard
		"100%":       {deploy},         // nor is percent
		"1%":         {},               // "1%" appears nowhere literally
		"":           {deploy, refund}, // no query: newest first
		"elsewhere":  {},               // another owner's trace
		"ROLLOUT":    {deploy},         // a tool call's input
		"run_shell":  {deploy},         // a tool call's name
	} {
		got, total := ids(readmodel.ListFilter{Query: query})
		require.Equal(t, want, got, "q=%q", query)
		require.Equal(t, len(want), total, "q=%q", query)
	}
	// The renamed source sorts by its display name: "Aardvark bot" < "alpha".
	got, _ := ids(readmodel.ListFilter{Sort: readmodel.SortSource})
	require.Equal(t, []string{refund, deploy}, got)
	got, _ = ids(readmodel.ListFilter{Sort: readmodel.SortSourceDesc})
	require.Equal(t, []string{deploy, refund}, got)
	// Pages of one: each page is the row at its offset in the sort's order
	// (the page's ids are chosen before the summaries are joined), and the
	// total counts every match, not the page.
	for sort, want := range map[readmodel.ListSort][]string{
		readmodel.SortImported:   {deploy, refund},
		readmodel.SortSource:     {refund, deploy},
		readmodel.SortSourceDesc: {deploy, refund},
	} {
		for off, id := range append(want, "") {
			page, total, err := q.ListTraces(ctx, u.UserID, readmodel.ListFilter{Sort: sort, Limit: 1, Offset: off})
			require.NoError(t, err)
			require.Equal(t, 2, total)
			if id == "" {
				require.Empty(t, page, "sort %v, offset %d", sort, off)
				continue
			}
			require.Len(t, page, 1, "sort %v, offset %d", sort, off)
			require.Equal(t, id, page[0].ID, "sort %v, offset %d", sort, off)
			require.NotEmpty(t, page[0].SourceName)
		}
	}
}
