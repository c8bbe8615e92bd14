package main

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// workerToken is the shared secret of the worker service:
// CRITIC_WORKER_TOKEN, else the token kept in the data directory (created on
// first use, mode 0600), which workers on the same machine read too.
func workerToken(cfg config) (string, error) {
	if t := strings.TrimSpace(os.Getenv("CRITIC_WORKER_TOKEN")); t != "" {
		return t, nil
	}
	path := filepath.Join(cfg.DataDir, "worker_token")
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return strings.TrimSpace(string(b)), nil
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	tok := "critic_worker_" + base64.RawURLEncoding.EncodeToString(b)
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return "", err
	}
	return tok, os.WriteFile(path, []byte(tok+"\n"), 0o600)
}
