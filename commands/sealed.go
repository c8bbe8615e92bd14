package commands

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
)

// A key a tenant sends for its own model endpoint (task_api_key) is stored
// in its event sealed with AES-256-GCM under a key derived from the
// deployment's worker token: the event log, backups and replays hold only
// ciphertext, the read model never sees it, and only the API opens it, for
// the worker that claims the run. Rotating the worker token makes earlier
// sealed keys unreadable; such a run fails at claim with a message saying so.

// WithSecret gives the commands the deployment secret (the worker token)
// that seals tenant-supplied keys. Without it, a request carrying a key is
// refused rather than stored in the clear.
func WithSecret(secret string) Option {
	return func(c *config) {
		if secret != "" {
			k := sha256.Sum256([]byte("critic tenant secrets v1\x00" + secret))
			c.sealKey = k[:]
		}
	}
}

var errNoSealKey = errors.New("this deployment has no secret to seal keys with")

// sealAEAD is AES-GCM under the deployment's seal key: what seal and open
// both use.
func (c *Streams) sealAEAD() (cipher.AEAD, error) {
	block, err := aes.NewCipher(c.sealKey)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

func (c *Streams) seal(plain string) (string, error) {
	if c.sealKey == nil {
		return "", errNoSealKey
	}
	gcm, err := c.sealAEAD()
	if err != nil {
		return "", err
	}
	nonce := make([]byte, gcm.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	return "v1:" + base64.RawStdEncoding.EncodeToString(gcm.Seal(nonce, nonce, []byte(plain), nil)), nil
}

func (c *Streams) open(sealed string) (string, error) {
	if c.sealKey == nil {
		return "", errNoSealKey
	}
	raw, err := base64.RawStdEncoding.DecodeString(strings.TrimPrefix(sealed, "v1:"))
	if err != nil {
		return "", errors.New("the sealed key is malformed")
	}
	gcm, err := c.sealAEAD()
	if err != nil {
		return "", err
	}
	if len(raw) < gcm.NonceSize() {
		return "", errors.New("the sealed key is malformed")
	}
	plain, err := gcm.Open(nil, raw[:gcm.NonceSize()], raw[gcm.NonceSize():], nil)
	if err != nil {
		return "", errors.New("the sealed key cannot be opened (the worker token changed since the run was requested); request the run again")
	}
	return string(plain), nil
}
