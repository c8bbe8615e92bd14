package model

import (
	"runtime/debug"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSetEngineGCUnlessGOGCIsSet(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)

	t.Setenv("GOGC", "")
	require.Equal(t, strconv.Itoa(EngineGCPercent), SetEngineGC())
	require.Equal(t, EngineGCPercent, debug.SetGCPercent(100), "GC target after SetEngineGC")

	t.Setenv("GOGC", "80") // the user's choice: left alone
	require.Equal(t, "80", SetEngineGC())
	require.Equal(t, 100, debug.SetGCPercent(100))
}
