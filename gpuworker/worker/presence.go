package worker

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/gpuworker/hub"
	"github.com/criticml/critic/gpuworker/model"
)

// PresenceRefresh is how often a worker re-reads its bases and re-checks
// the hub for its presence report: often enough that a base copied into
// a model root or a hub that comes back shows in the dialog within a
// minute, rarely enough that the hub sees one HEAD a worker a half-minute.
const PresenceRefresh = 30 * time.Second

// presence is what the worker reports about itself with every training
// poll (jobs.ClaimNextTraining): its device and the bases it can load.
// It is refreshed in the background so a poll never waits on the hub.
type presence struct {
	hub    *hub.Client
	device string

	mu     sync.Mutex
	bases  []rewardmodels.BaseChoice
	hubErr string
}

// deviceKind is the device a GOMLX_BACKEND value trains on: a CUDA PJRT
// plugin is a GPU, everything else (the pure-Go backend, a CPU plugin)
// the CPU.
func deviceKind(backend string) string {
	s, err := model.ParseBackendSpec(backend)
	if err == nil && s.Kind == "xla" && strings.Contains(strings.ToLower(s.Plugin), "cuda") {
		return rewardmodels.DeviceGPU
	}
	return rewardmodels.DeviceCPU
}

// refresh re-reads the local bases and probes the hub (bounded by
// hub.ProbeTimeout).
func (p *presence) refresh(ctx context.Context) {
	perr := p.hub.Probe(ctx)
	bases := p.hub.Bases(perr)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.bases, p.hubErr = bases, ""
	if perr != nil {
		p.hubErr = perr.Error()
	}
}

// run refreshes the report now and every PresenceRefresh while ctx lives.
func (p *presence) run(ctx context.Context) {
	for {
		p.refresh(ctx)
		select {
		case <-ctx.Done():
			return
		case <-time.After(PresenceRefresh):
		}
	}
}

// fill adds the latest report to a training poll (nothing about bases
// before the first refresh ends).
func (p *presence) fill(req *jobs.ClaimNextTraining) {
	p.mu.Lock()
	defer p.mu.Unlock()
	req.Device, req.Bases, req.HubError = p.device, p.bases, p.hubErr
}
