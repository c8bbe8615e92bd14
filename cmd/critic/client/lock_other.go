//go:build !unix

package client

// Lock is a no-op where advisory file locks are not available: a sync and
// a hook upload running at the same moment may then both send a session
// (the server treats the second as a no-op).
func Lock() (release func(), err error) { return func() {}, nil }
