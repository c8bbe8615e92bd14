package lease_test

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/criticml/critic/domain/evaluator"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite testdata/folded.golden.json")

func readLog(t *testing.T, name string) []events.Envelope {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	var log []events.Envelope
	require.NoError(t, json.Unmarshal(raw, &log))
	return log
}

// TestOldLogsFoldToTheRecordedState folds job streams written with the
// event types every leased kind has always used (training and feedback
// extraction on a model stream, a GEPA run, evaluator candidates — with
// claims, heartbeats, hand-backs, lost runs and a claim that recorded no
// lease) and compares what the aggregates decide from them (who holds the
// lease, the lost runs, the sweep's requeue or failure at several times)
// with testdata/folded.golden.json, recorded with the code before the lease
// state machine was shared: replaying an old log decides the same.
func TestOldLogsFoldToTheRecordedState(t *testing.T) {
	t.Parallel()
	at := func(s int) time.Time {
		return time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC).Add(time.Duration(s) * time.Second)
	}
	got := map[string]any{}

	// Training and extraction: fold the model up to each point and ask.
	log := readLog(t, "training_log.json")
	for n := 1; n <= len(log); n++ {
		m, err := rewardmodels.Fold(log[:n])
		require.NoError(t, err)
		exp, expOK := rewardmodels.DecideLeaseExpiry(m, at(80))
		req, fail, xOK := rewardmodels.DecideExtractionLeaseExpiry(m, at(80))
		_, claimErr := rewardmodels.DecideClaim(m, 1, "w-9", "", 30*time.Second)
		hb, hbErr := rewardmodels.DecideHeartbeat(m, 1, "w-2", events.Progress{Phase: "training"})
		back, backErr := rewardmodels.DecideHandBack(m, 1, "w-2", "")
		var x map[string]any
		if e := m.Extraction; e != nil {
			x = map[string]any{"attempt": e.Attempt, "worker": e.WorkerID, "lease": e.Lease.String(), "last_beat": e.LastBeat,
				"targets_done": e.TargetsDone, "finished": e.Finished}
		}
		got[log[n-1].ID] = map[string]any{
			"status": m.Status, "worker": m.WorkerID, "lease": m.Lease.String(), "last_beat": m.LastBeat, "lost": m.Lost,
			"extraction": x, "expiry": exp, "expiry_ok": expOK, "x_requeue": req, "x_fail": fail, "x_ok": xOK,
			"claim_err": errString(claimErr), "heartbeat": hb, "heartbeat_err": errString(hbErr), "handback": back, "handback_err": errString(backErr),
		}
	}
	// A third lost run fails the attempt with every run listed.
	m, err := rewardmodels.Fold(log)
	require.NoError(t, err)
	m.Lost = append(m.Lost, "worker w-0 sent no heartbeat")
	exp, _ := rewardmodels.DecideLeaseExpiry(m, at(80))
	got["training-third-lost-run"] = exp

	glog := readLog(t, "gepa_log.json")
	for n := 1; n <= len(glog); n++ {
		var g rewardmodels.GepaState
		for _, e := range glog[:n] {
			require.NoError(t, g.Apply(e))
		}
		exp, ok := rewardmodels.DecideGepaLeaseExpiry(g, "g1", at(90))
		back, backErr := rewardmodels.DecideGepaHandBack(g, "g1", "g-3", "stopping\nsecond line")
		got[glog[n-1].ID] = map[string]any{"status": g.Status, "worker": g.WorkerID, "lease": g.Lease.String(), "last_beat": g.LastBeat,
			"lost": g.Lost, "expiry": exp, "expiry_ok": ok, "handback": back, "handback_err": errString(backErr)}
	}

	var ev evaluator.State
	for _, e := range readLog(t, "evaluator_log.json") {
		ev.Apply(e)
		for _, id := range []string{"c1", "c2"} {
			c := ev.Candidate(id)
			if c == nil {
				continue
			}
			early, earlyOK := ev.DecideLeaseExpiry(id, at(12), 0)
			late, lateOK := ev.DecideLeaseExpiry(id, at(100), 30*time.Second)
			got[e.ID+"/"+id] = map[string]any{"status": c.Status, "worker": c.WorkerID, "lease": c.Lease.String(), "last_beat": c.LastBeat,
				"lost": c.Lost, "early": early, "early_ok": earlyOK, "late": late, "late_ok": lateOK, "running": ev.Running()}
		}
	}

	raw, err := json.MarshalIndent(got, "", " ")
	require.NoError(t, err)
	golden := filepath.Join("testdata", "folded.golden.json")
	if *update {
		require.NoError(t, os.WriteFile(golden, raw, 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	require.JSONEq(t, string(want), string(raw))
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
