package readmodel_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/labels"
	"github.com/criticml/critic/platform/eventstore"
	"github.com/criticml/critic/platform/pg/pgtest"
	"github.com/criticml/critic/projections/readmodel"
)

// TestListScoresFollowModelLabels: a label the step-label model records
// for an imported trace (trace.steps_labeled, not in the import) gives the
// trace its outcome and trace score on the list, where ?outcome finds it;
// a second read model built from the same log has the same list.
func TestListScoresFollowModelLabels(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, blobs, store, cmds := newLog(t)
	u, err := cmds.CreateUser.Handle(ctx, commands.CreateUser{Name: "labeled"})
	require.NoError(t, err)
	res, err := cmds.ImportTraces.Handle(ctx, commands.ImportTraces{Actor: commands.Actor{UserID: u.UserID}, Input: commands.ImportTracesInput{Format: "stash",
		Data: []byte(`{"title":"Refund","steps":[{"role":"user","content":"refund order 7"},{"role":"assistant","content":"I cannot find it."}]}`)}})
	require.NoError(t, err)
	id := res.TraceIDs[0]

	chunks := labels.Chunks([]domain.Step{{Role: "user", Content: "refund order 7"}, {Role: "assistant", Content: "I cannot find it."}})
	yes := true
	answer := labels.Label{ChunkID: chunks[1].ID, TaskID: "t", Actor: labels.ActorAgent, Type: labels.TypeAnswer, Effect: labels.EffectNone,
		Result: labels.ResultNone, IsOutput: &yes, Outcome: labels.OutcomeFailed, Stance: labels.StanceConfident, Coverage: labels.CoverageNone}
	_, err = store.Append(ctx, eventstore.Meta{Actor: "worker:test"}, nil, []events.New{{ID: uuid.NewString(), Stream: events.TraceStream(id),
		OwnerID: u.UserID, Type: events.TraceStepsLabeled, Payload: events.TraceStepsLabeledV1{TraceID: id, Revision: 1, Model: "m", Labels: []labels.Label{answer}}}})
	require.NoError(t, err)

	all, err := store.ReadAfter(ctx, 0, 1000)
	require.NoError(t, err)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	list := func(pool *pgxpool.Pool) []readmodel.TraceSummary {
		t.Helper()
		traces, total, err := readmodel.NewQueries(pool).ListTraces(ctx, u.UserID, readmodel.ListFilter{Limit: 50, Outcomes: []string{"failure"}, Sort: "trace_score"})
		require.NoError(t, err)
		require.Equal(t, 1, total)
		return traces
	}
	require.NoError(t, readmodel.New(pool, blobs, log).Apply(ctx, all))
	got := list(pool)
	require.Equal(t, id, got[0].ID)
	require.Equal(t, "failure", *got[0].Outcome)
	require.InDelta(t, -0.5, *got[0].TraceScore, 1e-9, "as the snapshot's task_scores for the same label")
	require.Nil(t, got[0].ActionCredit)

	// The same log into a fresh read model: the same list.
	fresh := pgtest.NewPool(t)
	require.NoError(t, readmodel.New(fresh, blobs, log).Apply(ctx, all))
	require.Equal(t, got, list(fresh))
}
