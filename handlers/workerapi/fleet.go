package workerapi

import (
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/rewardmodels"
)

// FleetWindow is how long a worker counts as present after its last call:
// an idle worker polls for training every 2 s and a busy one beats its
// lease every third of it (10 s), so a minute covers both with room.
const FleetWindow = time.Minute

// Fleet is what each worker last reported about itself (device, the base
// models it can load) with its training polls, for GET /base-models: the
// API may not see a worker's disk, so the workers say what is on it.
// It is per API instance and in memory, not events: presence is not a
// fact of anyone's data, and behind a load balancer every instance hears
// from every polling worker within seconds.
type Fleet struct {
	now func() time.Time

	mu      sync.Mutex
	workers map[string]fleetEntry
}

type fleetEntry struct {
	report rewardmodels.WorkerBases
	seen   time.Time
}

// maxReportedBases bounds what one worker's report may hold.
const maxReportedBases = 200

// NewFleet returns an empty fleet; now is the clock (time.Now).
func NewFleet(now func() time.Time) *Fleet {
	return &Fleet{now: now, workers: map[string]fleetEntry{}}
}

// polled records a training poll's presence report; a poll without bases
// (a worker that has not finished its first look, or an older worker)
// only keeps a known worker present.
func (f *Fleet) polled(req jobs.ClaimNextTraining) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.workers[req.WorkerID]
	if req.Bases != nil {
		if len(req.Bases) > maxReportedBases {
			req.Bases = req.Bases[:maxReportedBases]
		}
		e, ok = fleetEntry{report: rewardmodels.WorkerBases{Device: req.Device, Bases: req.Bases, HubError: req.HubError}}, true
	}
	if ok {
		e.seen = f.now()
		f.workers[req.WorkerID] = e
	}
}

// touched keeps a known worker present while it works on a job (its
// lease beats, reports).
func (f *Fleet) touched(workerID string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if e, ok := f.workers[workerID]; ok {
		e.seen = f.now()
		f.workers[workerID] = e
	}
}

// Present is the latest report of every worker heard from within
// FleetWindow, in worker-id order; older ones are forgotten.
func (f *Fleet) Present() []rewardmodels.WorkerBases {
	f.mu.Lock()
	defer f.mu.Unlock()
	cutoff := f.now().Add(-FleetWindow)
	maps.DeleteFunc(f.workers, func(_ string, e fleetEntry) bool { return e.seen.Before(cutoff) })
	out := make([]rewardmodels.WorkerBases, 0, len(f.workers))
	for _, id := range slices.Sorted(maps.Keys(f.workers)) {
		out = append(out, f.workers[id].report)
	}
	return out
}
