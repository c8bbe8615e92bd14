package snapshot

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain/events"
)

// BenchmarkScoreReports prices what the query snapshot does per trace a
// worker reports scores for (background scoring: one trace's action and
// trace scores per report, a few reports per 100 ms batch) in an account
// that already holds scored traces, against the reference of applying the
// same trace's import in the same run: "a report costs N× an import".
func BenchmarkScoreReports(b *testing.B) {
	ctx := context.Background()
	f := newFixture(b)
	const traces, per, reportsPerBatch = 600, 20, 3
	roles := make([]string, per)
	for i := range roles {
		roles[i] = []string{"user", "assistant"}[i%2]
	}
	var imports []events.Envelope
	for i := range traces {
		id := fmt.Sprintf("t%05d", i)
		imports = append(imports, f.ev("alice", events.TraceImported, events.TraceImportedV1{TraceID: id, Title: id,
			SourceFormat: "stash", Revision: 1, Steps: steps(id, roles...)}))
	}
	// The reference: the first half imported, one trace a batch as live OTLP would.
	start := time.Now()
	for _, e := range imports[:traces/2] {
		require.NoError(b, f.proj.Apply(ctx, []events.Envelope{e}))
	}
	perImport := time.Since(start) / time.Duration(traces/2)
	require.NoError(b, f.proj.Apply(ctx, imports[traces/2:]))
	report := func(i int, model string) []events.Envelope {
		id := fmt.Sprintf("t%05d", i)
		var as []events.ActionScore
		for s := 1; s < per; s += 2 {
			as = append(as, events.ActionScore{TraceID: id, StepID: fmt.Sprintf("%s-s%d", id, s), Revision: 1, Score: float64(s) / 10, Credit: 0.1})
		}
		return []events.Envelope{
			f.ev("alice", events.ActionsScored, events.ActionsScoredV1{ModelID: model, ModelName: model, Scores: as}),
			f.ev("alice", events.TracesScored, events.TracesScoredV1{ModelID: model, ModelName: model, Scores: []events.TraceScore{{TraceID: id, Revision: 1, Score: 0.5}}}),
		}
	}
	// Half the account is scored by the model already.
	for i := range traces / 2 {
		require.NoError(b, f.proj.Apply(ctx, report(i, "m1")))
	}
	b.ResetTimer()
	var n int
	for b.Loop() {
		n = 0
		for i := traces / 2; i < traces; i += reportsPerBatch {
			var batch []events.Envelope
			for j := i; j < i+reportsPerBatch && j < traces; j++ {
				batch = append(batch, report(j, "m1")...)
				n++
			}
			require.NoError(b, f.proj.Apply(ctx, batch))
		}
	}
	perReport := b.Elapsed() / time.Duration(b.N*n)
	require.Equal(b, [][]any{{int64(traces * per / 2)}}, f.rows("alice", "SELECT count(*) FROM action_scores"))
	fmt.Printf("snapshot: a trace's score report %v, its import %v (ratio %.2f; %d reports of %d action scores, %d a batch, %d traces)\n",
		perReport.Round(time.Microsecond), perImport.Round(time.Microsecond), float64(perReport)/float64(perImport), n, per/2, reportsPerBatch, traces)
}
