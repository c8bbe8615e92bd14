package e2e

import "testing"

// BenchmarkEncryptionOverheadIngest measures `make bench-ingest-encryption`:
// the bulk import of BenchmarkIngest (10,000 traces × 20 steps, 500 per
// request, 4 clients, until the read model has them) against a server that
// stores payloads in clear (CRITIC_ENCRYPTION=off, the reference) and one
// that seals every trace's payloads with its own data key (on), in the same
// run. The two alternate (off, on, on, off) so drift on a shared machine and
// order effects hit both; each side reports its best round.
func BenchmarkEncryptionOverheadIngest(b *testing.B) {
	for range b.N {
		offOnIngest(b, "ingest-encryption", "CRITIC_ENCRYPTION", 0.95)
	}
}
