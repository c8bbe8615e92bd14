package blob

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// LegacySigningKeyFile is where older versions kept the URL-signing secret:
// inside the very directory it signs for, where anything that can list or
// copy the blobs (a backup, a sync to a bucket, a shared volume) carries the
// key that forges download links with it. NewLocal moves it out.
const LegacySigningKeyFile = ".signing-key"

// DefaultSigningKeyPath is where a store on dir keeps its URL-signing secret
// unless WithSigningKeyFile says otherwise: next to the directory, never in
// it (dir "/data/blobs" → "/data/blobs.signing-key"). It is created once
// (mode 0600) so signed URLs stay valid across restarts and every process
// sharing the directory (API, in-process worker) signs with the same secret.
func DefaultSigningKeyPath(dir string) string {
	return filepath.Clean(dir) + ".signing-key"
}

// signingKeyLen is the secret size: HMAC-SHA256's block-size-independent
// security level is reached at 32 bytes.
const signingKeyLen = 32

// Errors VerifySignature returns, so the download handler can tell a user
// whether to ask for a fresh link or whether the link was never valid.
var (
	ErrBadSignature = errors.New("invalid download signature")
	ErrExpired      = errors.New("download link has expired")
)

// Local keeps blobs as files under a directory. Writes are atomic (temp file
// + rename), so a reader never sees half an object. Its signed URLs point at
// the API's /blobs/ route (handlers/blobdl), which checks an HMAC over the key
// and expiry, because a directory has no URL of its own.
type Local struct {
	dir     string
	secret  []byte
	keyFile string // where the secret lives; "" → DefaultSigningKeyPath(dir)

	mu        sync.RWMutex
	publicURL string
}

// LocalOption configures NewLocal.
type LocalOption func(*Local) error

// WithSigningKeyFile keeps the persisted secret at path instead of
// DefaultSigningKeyPath (CRITIC_BLOB_SIGNING_KEY_FILE). The path must lie
// outside the store's directory.
func WithSigningKeyFile(path string) LocalOption {
	return func(l *Local) error {
		abs, err := filepath.Abs(path)
		if err != nil {
			return fmt.Errorf("blob store: signing key file: %w", err)
		}
		l.keyFile = abs
		return nil
	}
}

// WithPublicURL sets the base URL signed URLs start with; see SetPublicURL.
func WithPublicURL(base string) LocalOption {
	return func(l *Local) error { return l.SetPublicURL(base) }
}

// NewLocal returns a store rooted at dir, creating it if needed, and loads
// (or creates, once) the signing secret outside dir — at
// DefaultSigningKeyPath(dir) or WithSigningKeyFile's path — unless
// a test's WithSigningSecret gives one. A secret an older version left inside dir
// (LegacySigningKeyFile) is moved there first, so links already handed out
// keep working; if a secret already exists outside, the one inside is
// deleted.
func NewLocal(dir string, opts ...LocalOption) (*Local, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("blob store: %w", err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("blob store: %w", err)
	}
	l := &Local{dir: abs}
	for _, o := range opts {
		if err := o(l); err != nil {
			return nil, err
		}
	}
	legacy := filepath.Join(abs, LegacySigningKeyFile)
	if l.secret != nil {
		// The secret comes from elsewhere: one left in the directory is
		// only a liability.
		if err := os.Remove(legacy); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("blob store: remove the old signing key %s: %w", legacy, err)
		}
		return l, nil
	}
	if l.keyFile == "" {
		l.keyFile = DefaultSigningKeyPath(abs)
	}
	if rel, err := filepath.Rel(abs, l.keyFile); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil, fmt.Errorf("blob store: signing key file %s lies inside the blob directory %s it signs for; keep it outside (CRITIC_BLOB_SIGNING_KEY_FILE)", l.keyFile, abs)
	}
	if err := migrateLegacySecret(legacy, l.keyFile); err != nil {
		return nil, err
	}
	if l.secret, err = loadOrCreateSecret(l.keyFile); err != nil {
		return nil, err
	}
	return l, nil
}

// migrateLegacySecret moves a secret from inside the blob directory to path.
// The move is a hard link then an unlink, so a concurrent starter either
// sees the old file or the new one, never neither; when path already holds
// a secret, that one wins and the old copy is removed.
func migrateLegacySecret(legacy, path string) error {
	b, err := os.ReadFile(legacy)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("blob store: read the old signing key %s: %w", legacy, err)
	}
	if _, err := checkSecret(legacy, b); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("blob store: move the signing key out of the blob directory: %w", err)
	}
	if err := os.Link(legacy, path); err != nil && !errors.Is(err, os.ErrExist) {
		// Another filesystem: write a copy the same way a new secret is
		// published.
		if werr := publishSecret(path, b); werr != nil && !errors.Is(werr, os.ErrExist) {
			return fmt.Errorf("blob store: move the signing key %s to %s: %w", legacy, path, werr)
		}
	}
	if err := os.Remove(legacy); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("blob store: remove the old signing key %s: %w", legacy, err)
	}
	return nil
}

// loadOrCreateSecret publishes a fresh secret with a hard link from a fully
// written temp file, so two processes starting at once on the same directory
// agree on one secret and neither can read a half-written one.
func loadOrCreateSecret(path string) ([]byte, error) {
	if b, err := os.ReadFile(path); err == nil {
		return checkSecret(path, b)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("blob store: read signing key: %w", err)
	}
	secret := make([]byte, signingKeyLen)
	if _, err := rand.Read(secret); err != nil {
		return nil, fmt.Errorf("blob store: generate signing key: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("blob store: create signing key: %w", err)
	}
	if err := publishSecret(path, secret); err != nil {
		if errors.Is(err, os.ErrExist) { // another process won the race
			b, err := os.ReadFile(path)
			if err != nil {
				return nil, fmt.Errorf("blob store: read signing key: %w", err)
			}
			return checkSecret(path, b)
		}
		return nil, fmt.Errorf("blob store: create signing key %s: %w", path, err)
	}
	return secret, nil
}

// publishSecret writes secret to a private temp file next to path and hard
// links it into place; os.ErrExist means path already existed.
func publishSecret(path string, secret []byte) error {
	tmp, err := writeTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*", 0o600, func(w io.Writer) error {
		_, err := w.Write(secret)
		return err
	})
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	return os.Link(tmp, path)
}

func checkSecret(path string, b []byte) ([]byte, error) {
	if len(b) < signingKeyLen {
		return nil, fmt.Errorf("blob store: signing key %s is %d bytes, want %d (delete it to generate a new one; outstanding links stop working)", path, len(b), signingKeyLen)
	}
	return b, nil
}

// Dir is the directory the store keeps its files in.
func (l *Local) Dir() string { return l.dir }

// SetPublicURL sets the base URL (scheme, host and optional path prefix) at
// which the API serves /blobs/. The API calls it at start, once it knows the
// address users reach it at (CRITIC_PUBLIC_URL).
func (l *Local) SetPublicURL(base string) error {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("blob store: public URL %q must be an absolute http(s) URL without query", base)
	}
	l.mu.Lock()
	l.publicURL = strings.TrimRight(base, "/")
	l.mu.Unlock()
	return nil
}

func (l *Local) path(key string) (string, error) {
	if err := ValidateKey(key); err != nil {
		return "", err
	}
	return filepath.Join(l.dir, filepath.FromSlash(key)), nil
}

// Put stores data under key, replacing any previous object.
func (l *Local) Put(_ context.Context, key string, data []byte) error {
	p, err := l.path(key)
	if err != nil {
		return err
	}
	return writeAtomic(p, func(w io.Writer) error { _, err := w.Write(data); return err })
}

// PutFile copies the file at src under key, streaming it.
func (l *Local) PutFile(ctx context.Context, key, src string) error {
	p, err := l.path(key)
	if err != nil {
		return err
	}
	f, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("blob store: %w", err)
	}
	defer f.Close()
	return writeAtomic(p, func(w io.Writer) error { _, err := io.Copy(w, ctxReader{ctx, f}); return err })
}

// Get returns the object stored under key.
func (l *Local) Get(_ context.Context, key string) ([]byte, error) {
	f, _, err := l.Open(key)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("blob store: %w", err)
	}
	return b, nil
}

// GetToFile copies the object under key to dst, streaming it.
func (l *Local) GetToFile(ctx context.Context, key, dst string) error {
	f, _, err := l.Open(key)
	if err != nil {
		return err
	}
	defer f.Close()
	return writeAtomic(dst, func(w io.Writer) error { _, err := io.Copy(w, ctxReader{ctx, f}); return err })
}

// Open returns the object's file and its info, for callers that stream it
// (the download handler serves ranges from it). The caller closes the file.
func (l *Local) Open(key string) (*os.File, os.FileInfo, error) {
	p, err := l.path(key)
	if err != nil {
		return nil, nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, notDirErr) {
			return nil, nil, fmt.Errorf("%w: %s", ErrNotFound, key)
		}
		return nil, nil, fmt.Errorf("blob store: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("blob store: %w", err)
	}
	if !fi.Mode().IsRegular() { // a key prefix is a directory here, not an object
		f.Close()
		return nil, nil, fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	return f, fi, nil
}

// Reader streams the object under key.
func (l *Local) Reader(_ context.Context, key string) (io.ReadCloser, error) {
	f, _, err := l.Open(key)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// Exists reports whether key holds an object.
func (l *Local) Exists(_ context.Context, key string) (bool, error) {
	p, err := l.path(key)
	if err != nil {
		return false, err
	}
	fi, err := os.Stat(p)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, notDirErr) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("blob store: %w", err)
	}
	return fi.Mode().IsRegular(), nil
}

// Delete removes key; a missing key is not an error.
func (l *Local) Delete(_ context.Context, key string) error {
	p, err := l.path(key)
	if err != nil {
		return err
	}
	fi, err := os.Lstat(p)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, notDirErr) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("blob store: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil // a directory of other keys, not an object
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("blob store: %w", err)
	}
	return nil
}

// SignedURL returns <public URL>/blobs/<key>?expires=<unix>&sig=<hex HMAC>,
// which handlers/blobdl serves without an API key until expires.
func (l *Local) SignedURL(_ context.Context, key string, ttl time.Duration) (string, error) {
	if err := ValidateKey(key); err != nil {
		return "", err
	}
	if err := checkTTL(ttl); err != nil {
		return "", err
	}
	l.mu.RLock()
	base := l.publicURL
	l.mu.RUnlock()
	if base == "" {
		return "", errors.New("blob store: no public URL set for signed downloads (CRITIC_PUBLIC_URL)")
	}
	// Truncated to the second, like SigV4's X-Amz-Date + X-Amz-Expires, so a
	// link lives between ttl-1s and ttl on both implementations.
	exp := time.Now().Add(ttl).Unix()
	expires := strconv.FormatInt(exp, 10)
	segs := strings.Split(key, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	q := url.Values{"expires": {expires}, "sig": {l.sign(key, expires)}}
	return base + "/blobs/" + strings.Join(segs, "/") + "?" + q.Encode(), nil
}

// sign is HMAC-SHA256(secret, key + "\n" + expires): the newline cannot occur
// in a valid key, so no (key, expires) pair collides with another.
func (l *Local) sign(key, expires string) string {
	m := hmac.New(sha256.New, l.secret)
	m.Write([]byte(key + "\n" + expires))
	return hex.EncodeToString(m.Sum(nil))
}

// VerifySignature checks a download request's key, expires and sig against
// the secret (in constant time) and the clock. It returns ErrBadSignature or
// ErrExpired; the signature is checked first so a forged link never learns
// anything, not even whether it would have expired.
func (l *Local) VerifySignature(key, expires, sig string, now time.Time) error {
	got, err := hex.DecodeString(sig)
	if err != nil || len(got) != sha256.Size {
		return ErrBadSignature
	}
	want, _ := hex.DecodeString(l.sign(key, expires))
	if !hmac.Equal(got, want) {
		return ErrBadSignature
	}
	exp, err := strconv.ParseInt(expires, 10, 64)
	if err != nil {
		return ErrBadSignature // unreachable: we only sign decimal expiries
	}
	if !now.Before(time.Unix(exp, 0)) {
		return ErrExpired
	}
	return nil
}

// writeAtomic writes dst through a synced temp file in its directory and
// renames it into place, so a crash or a concurrent reader never sees a
// partial object and an object is on disk before an event refers to it.
func writeAtomic(dst string, write func(io.Writer) error) error {
	dir := filepath.Dir(dst)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("blob store: %w", err)
	}
	tmp, err := writeTemp(dir, ".put-*", 0o644, write)
	if err != nil {
		return fmt.Errorf("blob store: %w", err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("blob store: %w", err)
	}
	return nil
}

// writeTemp writes a new file in dir (named after pattern, as
// os.CreateTemp) through write, gives it mode, syncs it and returns its
// name, for the caller to move or link into place whole; on error no file
// is left.
func writeTemp(dir, pattern string, mode os.FileMode, write func(io.Writer) error) (string, error) {
	tmp, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return "", err
	}
	err = write(tmp)
	if err == nil {
		err = tmp.Chmod(mode)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	return tmp.Name(), nil
}

// ctxReader stops a long copy when the caller gives up.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// notDirErr is what opening "a/b" returns when "a" is an object: for us, b
// simply does not exist.
var notDirErr = syscall.ENOTDIR
