package blob

import "fmt"

// WithSigningSecret uses secret (at least 32 bytes) instead of the one
// persisted outside the directory; only tests give the secret this way.
func WithSigningSecret(secret []byte) LocalOption {
	return func(l *Local) error {
		if len(secret) < signingKeyLen {
			return fmt.Errorf("blob store: signing secret must be at least %d bytes", signingKeyLen)
		}
		l.secret = append([]byte(nil), secret...)
		return nil
	}
}
