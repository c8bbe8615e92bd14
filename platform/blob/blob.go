// Package blob stores large objects — event payloads over the inline limit
// (claim checks) and model checkpoints — behind one small interface, with a
// local-directory implementation for single-machine deployments and an S3
// implementation (any S3-compatible store) for distributed ones. Both hand out
// signed download URLs, so a user can fetch a checkpoint of hundreds of MB
// without the API streaming it and without forwarding their API key.
package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// ErrNotFound is returned (wrapped) by Get and GetToFile for a key that was
// never stored or was deleted, so callers can answer 404 instead of 500.
var ErrNotFound = errors.New("blob not found")

// ErrInvalidKey is returned (wrapped) by every operation for a key that could
// escape the store's root or that the two implementations would treat
// differently; rejecting it up front keeps keys portable between a local
// directory and a bucket.
var ErrInvalidKey = errors.New("invalid blob key")

// MaxSignedURLTTL is the longest a signed URL may live. It is SigV4's limit
// for presigned URLs; the local store enforces the same bound so that code
// tested on one deployment does not fail on the other.
const MaxSignedURLTTL = 7 * 24 * time.Hour

// maxKeyLen is S3's limit on object key length (bytes, prefix included in
// practice; we keep a margin for the bucket prefix).
const maxKeyLen = 900

// Store is a flat key → bytes store. Keys are slash-separated relative paths
// ("events/<id>.json", "checkpoints/<model>/weights.tar.gz"); see ValidateKey.
type Store interface {
	// Put stores data under key, replacing any previous object. Readers never
	// observe a partially written object.
	Put(ctx context.Context, key string, data []byte) error
	// PutFile stores the file at path under key, streaming it: checkpoint
	// archives are hundreds of MB and must not be read into memory.
	PutFile(ctx context.Context, key, path string) error
	// Get returns the whole object; for small objects such as claim-checked
	// event payloads.
	Get(ctx context.Context, key string) ([]byte, error)
	// GetToFile streams the object into a file at path, which appears only
	// once complete (temp file + rename in path's directory).
	GetToFile(ctx context.Context, key, path string) error
	// Reader streams the object; the caller closes it. For objects another
	// party wrote (a worker's score files), so the reader can bound what it
	// reads instead of holding the whole object in memory.
	Reader(ctx context.Context, key string) (io.ReadCloser, error)
	// Exists reports whether key holds an object.
	Exists(ctx context.Context, key string) (bool, error)
	// Delete removes key; deleting a missing key is not an error, so a retried
	// cleanup succeeds.
	Delete(ctx context.Context, key string) error
	// SignedURL returns a URL anyone can GET, without an API key, until ttl
	// elapses. It does not check that the object exists (neither does S3's
	// presigning); a GET of a missing object answers 404.
	SignedURL(ctx context.Context, key string, ttl time.Duration) (string, error)
}

// ValidateKey rejects keys that are not plain relative paths: empty keys or
// segments ("a//b", trailing "/"), absolute paths, "." and ".." segments,
// backslashes, control characters, invalid UTF-8, and segments starting with
// "." — those are reserved for the local store's temp files and signing key,
// so no key can ever name (or overwrite, or sign a URL for) the secret.
func ValidateKey(key string) error {
	bad := func(why string) error { return fmt.Errorf("%w %q: %s", ErrInvalidKey, key, why) }
	switch {
	case key == "":
		return bad("empty")
	case len(key) > maxKeyLen:
		return bad(fmt.Sprintf("longer than %d bytes", maxKeyLen))
	case !utf8.ValidString(key):
		return bad("not valid UTF-8")
	case strings.HasPrefix(key, "/"):
		return bad("absolute")
	case strings.ContainsRune(key, '\\'):
		return bad("contains a backslash")
	}
	for _, r := range key {
		if unicode.IsControl(r) {
			return bad("contains a control character")
		}
	}
	for seg := range strings.SplitSeq(key, "/") {
		switch {
		case seg == "":
			return bad("empty path segment")
		case seg == "." || seg == "..":
			return bad("relative path segment")
		case strings.HasPrefix(seg, "."):
			return bad("segments starting with '.' are reserved")
		}
	}
	return nil
}

func checkTTL(ttl time.Duration) error {
	if ttl <= 0 || ttl > MaxSignedURLTTL {
		return fmt.Errorf("blob store: signed URL lifetime %v must be in (0, %v]", ttl, MaxSignedURLTTL)
	}
	return nil
}
