package model

import (
	"os"
	"runtime/debug"
	"strconv"
)

// EngineGCPercent is the garbage-collection target (GOGC) SetEngineGC gives a process
// that scores or trains.
//
// Why: the pure-Go backend allocates every intermediate tensor afresh (hundreds of MB
// per op for an 8 × 1024-token batch of a 0.6B model), returns it at its last use to a
// per-size-class sync.Pool (a freed buffer stays live to the collector until two
// collections pass without it being reused, and one size class never serves another),
// and those buffers are pointer-free, so a collection costs little while Go's default
// target (GOGC=100: the heap may grow to twice what is live, weights included) doubles
// the peak. Measured on `make bench-score-engine`, 8 × 1024 tokens: 2 layers, peak RSS
// 5.15 GiB at GOGC=100, 3.23 GiB at 25; 4 layers, 4.46–4.53 GiB at 25, 3.19–3.30 GiB at
// 10 (the graph's own simulated peak of live intermediates is 1.4 GiB), 3.01 at 5, with
// no measurable loss of speed at 10 (see gpuworker/scripts/BENCH_TRAIN.md).
const EngineGCPercent = 10

// SetEngineGC sets the GC target to EngineGCPercent unless the user set GOGC (theirs
// wins) and returns the value in effect, for the start-up log.
func SetEngineGC() string {
	if v := os.Getenv("GOGC"); v != "" {
		return v
	}
	debug.SetGCPercent(EngineGCPercent)
	return strconv.Itoa(EngineGCPercent)
}
