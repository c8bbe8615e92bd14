package workerapi

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/rewardmodels"
)

// A worker counts as present for FleetWindow after its last poll or job
// call; a poll without bases (before its first look) only keeps a known
// worker present, and never replaces what it reported.
func TestFleetKeepsTheLatestReportForTheWindow(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_000_000, 0)
	f := NewFleet(func() time.Time { return now })
	demo := rewardmodels.BaseChoice{ID: "/d/demo", Name: rewardmodels.DemoBaseName, Source: rewardmodels.BaseSourceDemo, Reachable: true}

	f.polled(jobs.ClaimNextTraining{WorkerID: "w1"})
	require.Empty(t, f.Present(), "no report yet")
	f.polled(jobs.ClaimNextTraining{WorkerID: "w1", Device: rewardmodels.DeviceCPU, Bases: []rewardmodels.BaseChoice{demo}})
	f.polled(jobs.ClaimNextTraining{WorkerID: "w1"})
	require.Equal(t, []rewardmodels.WorkerBases{{Device: rewardmodels.DeviceCPU, Bases: []rewardmodels.BaseChoice{demo}}}, f.Present())

	// Busy training: lease beats keep it present past the window.
	now = now.Add(FleetWindow - time.Second)
	f.touched("w1")
	now = now.Add(FleetWindow - time.Second)
	require.Len(t, f.Present(), 1)
	// Gone quiet: forgotten.
	now = now.Add(FleetWindow)
	require.Empty(t, f.Present())
	f.touched("w1")
	require.Empty(t, f.Present(), "a forgotten worker comes back with its next report, not a beat")
}
