package blob_test

import (
	"os/exec"
	"syscall"
)

// setDeathSignal kills the gateway if the test binary dies without running
// TestMain's cleanup (a timeout panic, kill -9).
func setDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
