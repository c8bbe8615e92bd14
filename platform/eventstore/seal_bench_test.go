package eventstore_test

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/platform/eventstore"
)

// BenchmarkResolveSealed is what each consumer pays per event with
// CRITIC_ENCRYPTION=on: opening a stored sealed trace.imported of 20 steps
// (the bench-ingest trace) as the relay hands it on (Postgres's jsonb text).
func BenchmarkResolveSealed(b *testing.B) {
	ctx := context.Background()
	s, ring, _, _ := newSealingStoreMaster(b)
	id := uuid.NewString()
	steps := make([]events.StepRecord, 20)
	for j := range steps {
		role := []string{"user", "assistant"}[j%2]
		steps[j].ID, steps[j].Index, steps[j].Role = uuid.NewString(), j, domain.Role(role)
		steps[j].Content = fmt.Sprintf("%s message %d of trace 7: %s", role, j, strings.Repeat("lorem ipsum ", 8))
	}
	_, err := s.Append(ctx, eventstore.Meta{Actor: "bench"}, nil, []events.New{{ID: uuid.NewString(), Stream: events.TraceStream(id),
		OwnerID: uuid.NewString(), Type: events.TraceImported, Payload: events.TraceImportedV1{TraceID: id, Title: "t", Revision: 1, Steps: steps}}})
	require.NoError(b, err)
	stored, err := s.ReadAfter(ctx, 0, 1)
	require.NoError(b, err)
	require.True(b, events.IsSealed(stored[0].Payload))
	b.SetBytes(int64(len(stored[0].Payload)))
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		if _, err := eventstore.Resolve(ctx, s.Blobs(), ring, stored[0]); err != nil {
			b.Fatal(err)
		}
	}
	// CPU time, unlike ns/op, does not grow with what else runs on a
	// shared machine.
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
