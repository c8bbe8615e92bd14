//go:build !unix

package bus

// lockDataDir is a no-op where flock is unavailable; do not point two
// brokers at one data dir there.
func lockDataDir(string) (func(), error) { return func() {}, nil }
