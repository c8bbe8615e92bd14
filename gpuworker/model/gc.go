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
// per op for an 8 × 1024-token batch of a 0.6B model) and those are pointer-free, so
// the collector's cost is small while Go's default target (GOGC=100: the heap may grow
// to twice what is live) doubles the peak. Measured on `make bench-score-engine`
// (2 layers): peak RSS 5.15 GiB at GOGC=100, 3.23 GiB at 25, PyTorch 2.84 GiB, with no
// loss of speed (see gpuworker/scripts/BENCH_TRAIN.md).
const EngineGCPercent = 25

// SetEngineGC sets the GC target to EngineGCPercent unless the user set GOGC (theirs
// wins) and returns the value in effect, for the start-up log.
func SetEngineGC() string {
	if v := os.Getenv("GOGC"); v != "" {
		return v
	}
	debug.SetGCPercent(EngineGCPercent)
	return strconv.Itoa(EngineGCPercent)
}
