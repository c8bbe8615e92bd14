//go:build !unix

package main

import "os/exec"

// detach is a no-op where sessions do not exist; the child still runs on
// after the hook returns.
func detach(cmd *exec.Cmd) {}
