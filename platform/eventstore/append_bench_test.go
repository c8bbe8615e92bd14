package eventstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/platform/eventstore"
	"github.com/criticml/critic/platform/pg/pgtest"
)

// BenchmarkAppendToLongStream is what an append pays for the length of the
// stream it extends (`make bench-append`): one event appended to a stream
// of 20,000 events — a model's scores stream after 10,000 scored traces,
// which every scoring report extends — against one appended to a stream of
// a few events, taking turns in the same run. Prints both per append and
// the ratio long/short (goal ≈ 1: the version check reads one index entry
// per stream, whatever its length).
func BenchmarkAppendToLongStream(b *testing.B) {
	const long, appends = 20000, 300
	ctx := context.Background()
	blobs, err := blob.NewLocal(b.TempDir())
	require.NoError(b, err)
	s := eventstore.New(pgtest.NewPool(b), blobs)
	meta := eventstore.Meta{Actor: "bench"}
	owner := uuid.NewString()
	scores, short := events.ScoresStream(uuid.NewString()), events.ScoringStream(uuid.NewString(), uuid.NewString())
	one := func(stream string) events.New {
		return events.New{ID: uuid.NewString(), Stream: stream, OwnerID: owner, Type: events.TracesScored,
			Payload: events.TracesScoredV1{Scores: []events.TraceScore{{TraceID: uuid.NewString(), Revision: 1, Score: 0.5}}}}
	}
	for done := 0; done < long; {
		batch := make([]events.New, 0, 2000)
		for ; len(batch) < cap(batch) && done < long; done++ {
			batch = append(batch, one(scores))
		}
		_, err := s.Append(ctx, meta, nil, batch)
		require.NoError(b, err)
	}
	for range b.N {
		var took [2]time.Duration
		for i := range 2 * appends {
			stream := []string{scores, short}[i%2]
			t0 := time.Now()
			_, err := s.Append(ctx, meta, nil, []events.New{one(stream)})
			took[i%2] += time.Since(t0)
			require.NoError(b, err)
		}
		perLong, perShort := took[0]/appends, took[1]/appends
		fmt.Printf("append: one event to a stream of %d+ events %v, to a short stream %v: ratio long/short %.2f (goal ≈ 1)\n",
			long, perLong, perShort, float64(perLong)/float64(perShort))
		b.ReportMetric(float64(perLong)/float64(perShort), "long/short")
	}
}
