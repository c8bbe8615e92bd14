package model

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// The garbage-collection target (GOGC) SetEngineGC gives a process that scores or
// trains follows its live heap: the heap may grow by EngineGCHeadroom or by
// EngineGCPercent % of what is live, whichever is more, and never by more than Go's
// default (double).
//
// Why: the pure-Go backend allocates every intermediate tensor afresh (hundreds of MB
// per op for an 8 × 1024-token batch of a 0.6B model), returns it at its last use to a
// per-size-class sync.Pool (a freed buffer stays live to the collector until two
// collections pass without it being reused, and one size class never serves another),
// and those buffers are pointer-free, so with a large model a collection costs little
// while Go's default target (the heap may grow to twice what is live, weights
// included) doubles the peak. Measured on `make bench-score-engine`, 8 × 1024 tokens:
// 2 layers, peak RSS 5.15 GiB at GOGC=100, 3.23 GiB at 25; 4 layers, 4.46–4.53 GiB at
// 25, 3.19–3.30 GiB at 10 (the graph's own simulated peak of live intermediates is
// 1.4 GiB), 3.01 at 5, with no measurable loss of speed at 10 (see
// gpuworker/scripts/BENCH_TRAIN.md). A small model is the opposite case: its live heap
// is tens of MB, so a fixed 10 % collects every few MB of allocation — the tiny train
// step ran 175–208 ms at GOGC=10 against 144–167 ms at 100 — while the memory a larger
// target lets it use is small.
const (
	EngineGCPercent  = 10
	EngineGCHeadroom = 256 << 20
)

// EngineGCPercentFor is the target for a live heap of live bytes (see EngineGCPercent).
func EngineGCPercentFor(live uint64) int {
	if live == 0 {
		return 100
	}
	return int(min(100, max(EngineGCPercent, EngineGCHeadroom*100/live)))
}

var engineGC sync.Once

// SetEngineGC makes the GC target follow the live heap (EngineGCPercentFor, set again
// after every collection) unless the user set GOGC (theirs wins), and returns what is
// in effect, for the start-up log.
func SetEngineGC() string {
	if v := os.Getenv("GOGC"); v != "" {
		return v
	}
	engineGC.Do(func() {
		retuneGC()
		afterEachGC(retuneGC)
	})
	return "adaptive (10–100, by live heap)"
}

// retuneGC sets the target for the live heap the last collection measured.
func retuneGC() {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() == metrics.KindUint64 {
		debug.SetGCPercent(EngineGCPercentFor(s[0].Value.Uint64()))
	}
}

// gcSentinel is big enough not to be packed by the tiny allocator (whose objects'
// finalizers may never run).
type gcSentinel struct{ _ [64]byte }

// afterEachGC runs f after every collection: a finalizer on an unreachable sentinel
// runs once the collector has freed it, and re-arms itself with a new one.
func afterEachGC(f func()) {
	runtime.SetFinalizer(&gcSentinel{}, func(*gcSentinel) {
		f()
		afterEachGC(f)
	})
}
