package model

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestEngineGCPercentFollowsTheLiveHeap(t *testing.T) {
	for _, c := range []struct {
		live uint64
		want int
	}{{0, 100}, {50 << 20, 100}, {256 << 20, 100}, {512 << 20, 50}, {1 << 30, 25}, {2560 << 20, 10}, {8 << 30, 10}} {
		require.Equal(t, c.want, EngineGCPercentFor(c.live), "live %d MiB", c.live>>20)
	}
}

// The user's GOGC is left alone; without one the target follows the live
// heap after every collection (this test process's heap is small: 100).
func TestSetEngineGCUnlessGOGCIsSet(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)

	t.Setenv("GOGC", "80") // the user's choice: left alone
	require.Equal(t, "80", SetEngineGC())
	require.Equal(t, 100, debug.SetGCPercent(100))

	t.Setenv("GOGC", "")
	require.Contains(t, SetEngineGC(), "adaptive")
	debug.SetGCPercent(37) // anything else: the next collection retunes it
	require.Eventually(t, func() bool {
		runtime.GC()
		p := debug.SetGCPercent(37)
		return p == 100
	}, 10*time.Second, 10*time.Millisecond, "the target was not set again after a collection")
}
