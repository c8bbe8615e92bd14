package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchmarkEncryptionOverheadIngest measures `make bench-ingest-encryption`:
// the bulk import of BenchmarkIngest (10,000 traces × 20 steps, 500 per
// request, 4 clients, until the read model has them) against a server that
// stores payloads in clear (CRITIC_ENCRYPTION=off, the reference) and one
// that seals every trace's payloads with its own data key (on), in the same
// run. The two alternate (off, on, on, off) so drift on a shared machine and
// order effects hit both; each side reports its best round.
func BenchmarkEncryptionOverheadIngest(b *testing.B) {
	for range b.N {
		const traces, steps, perRequest, clients, rounds = 10000, 20, 500, 4, 2
		lines := genTraces(traces, steps, "bench")
		var bodies [][]byte
		for i := 0; i < traces; i += perRequest {
			raw, err := json.Marshal(map[string]any{"format": "stash", "data": strings.Join(lines[i:i+perRequest], "\n")})
			require.NoError(b, err)
			bodies = append(bodies, raw)
		}
		best := map[string]float64{}
		for round := range rounds {
			modes := []string{"off", "on"}
			if round%2 == 1 {
				modes = []string{"on", "off"}
			}
			for _, mode := range modes {
				rate := bulkImport(b, bodies, clients, traces*steps, "CRITIC_ENCRYPTION="+mode)
				fmt.Printf("ingest-encryption: round %d, encryption %-3s: %.0f steps/s\n", round+1, mode, rate)
				best[mode] = max(best[mode], rate)
			}
		}
		fmt.Printf("ingest-encryption: encryption off %.0f steps/s, on %.0f steps/s, ratio on/off = %.3f (target ≥ 0.95)\n",
			best["off"], best["on"], best["on"]/best["off"])
	}
}
