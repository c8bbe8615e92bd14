//go:build unix

package bus

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockDataDir takes an exclusive advisory lock on dir, because kfake does
// not: two brokers writing one data dir (two `critic` processes on the same
// .data) would corrupt each other's logs. The lock dies with the process, so
// a kill -9 leaves nothing to clean up.
func lockDataDir(dir string) (release func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("bus: create data dir: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "critic-bus.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("bus: open lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("bus: data dir %s is in use by another broker: %w", dir, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}, nil
}
