package blob_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/platform/blob"
)

// urlParams names the query parameters of an implementation's signed URLs,
// so the suite can tamper with the signature and the lifetime.
type urlParams struct {
	// Signature holds the signature (hex for both implementations).
	Signature string
	// Expiry holds a number of seconds (absolute or relative) that only
	// ever grows a link's lifetime when increased.
	Expiry string
}

// localParams and s3Params are the parameters of the two implementations.
var (
	localParams = urlParams{Signature: "sig", Expiry: "expires"}
	s3Params    = urlParams{Signature: "X-Amz-Signature", Expiry: "X-Amz-Expires"}
)

// largeFileMB is the size of the streaming-memory check; CRITIC_BLOB_LARGE_MB
// overrides it (e.g. 200, a real checkpoint size).
func largeFileMB() int {
	if n, err := strconv.Atoi(os.Getenv("CRITIC_BLOB_LARGE_MB")); err == nil && n > 0 {
		return n
	}
	return 64
}

// runSuite runs the behaviour every blob.Store must share against one
// implementation (the local directory with its download handler, S3 via
// versitygw), so code tested on a laptop behaves the same against a bucket.
// newStore returns an empty store whose signed URLs are reachable over HTTP
// from the test (for the local store: with the download handler served); it
// is called once per subtest.
func runSuite(t *testing.T, p urlParams, newStore func(t *testing.T) blob.Store) {
	ctx := context.Background()

	// Not parallel: it measures this process's heap.
	t.Run("ReaderStreamsAnObject", func(t *testing.T) {
		s := newStore(t)
		require.NoError(t, s.Put(ctx, "r/obj", []byte("line 1\nline 2\n")))
		rd, err := s.Reader(ctx, "r/obj")
		require.NoError(t, err)
		got, err := io.ReadAll(rd)
		require.NoError(t, err)
		require.NoError(t, rd.Close())
		require.Equal(t, "line 1\nline 2\n", string(got))
		_, err = s.Reader(ctx, "r/missing")
		require.ErrorIs(t, err, blob.ErrNotFound)
		_, err = s.Reader(ctx, "../escape")
		require.ErrorIs(t, err, blob.ErrInvalidKey)
	})

	t.Run("PutFileAndGetToFileStreamLargeFiles", func(t *testing.T) {
		s := newStore(t)
		size := int64(largeFileMB()) << 20
		src := filepath.Join(t.TempDir(), "big.tar.gz")
		want := writeRandomFile(t, src, size)

		peak := heapGrowth(t, func() { require.NoError(t, s.PutFile(ctx, "large/big.tar.gz", src)) })
		t.Logf("PutFile of %d MiB: peak heap growth %.1f MiB", size>>20, float64(peak)/(1<<20))
		require.Less(t, peak, size/2, "PutFile must stream, not buffer the file")

		dst := filepath.Join(t.TempDir(), "out", "big.tar.gz")
		peak = heapGrowth(t, func() { require.NoError(t, s.GetToFile(ctx, "large/big.tar.gz", dst)) })
		t.Logf("GetToFile of %d MiB: peak heap growth %.1f MiB", size>>20, float64(peak)/(1<<20))
		require.Less(t, peak, size/2, "GetToFile must stream, not buffer the object")
		require.Equal(t, want, fileSHA(t, dst))
	})

	t.Run("PutGetRoundTrip", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		require.NoError(t, s.Put(ctx, "events/0191-a.json", []byte(`{"a":1}`)))
		require.NoError(t, s.Put(ctx, "deep/er/path/with space/ünï.bin", []byte{0, 1, 2, 255}))
		require.NoError(t, s.Put(ctx, "empty", nil))

		got, err := s.Get(ctx, "events/0191-a.json")
		require.NoError(t, err)
		require.Equal(t, `{"a":1}`, string(got))
		got, err = s.Get(ctx, "deep/er/path/with space/ünï.bin")
		require.NoError(t, err)
		require.Equal(t, []byte{0, 1, 2, 255}, got)
		got, err = s.Get(ctx, "empty")
		require.NoError(t, err)
		require.Empty(t, got)
	})

	t.Run("Overwrite", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		require.NoError(t, s.Put(ctx, "k", []byte("first version, longer")))
		require.NoError(t, s.Put(ctx, "k", []byte("second")))
		got, err := s.Get(ctx, "k")
		require.NoError(t, err)
		require.Equal(t, "second", string(got))

		src := filepath.Join(t.TempDir(), "f")
		require.NoError(t, os.WriteFile(src, []byte("third, from a file"), 0o644))
		require.NoError(t, s.PutFile(ctx, "k", src))
		got, err = s.Get(ctx, "k")
		require.NoError(t, err)
		require.Equal(t, "third, from a file", string(got))
	})

	t.Run("MissingKeyIsErrNotFound", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		_, err := s.Get(ctx, "nope/missing.json")
		require.ErrorIs(t, err, blob.ErrNotFound)

		dst := filepath.Join(t.TempDir(), "out")
		require.ErrorIs(t, s.GetToFile(ctx, "nope/missing.json", dst), blob.ErrNotFound)
		require.NoFileExists(t, dst)

		// A key prefix is not an object.
		require.NoError(t, s.Put(ctx, "dir/child", []byte("x")))
		_, err = s.Get(ctx, "dir")
		require.ErrorIs(t, err, blob.ErrNotFound)
		ok, err := s.Exists(ctx, "dir")
		require.NoError(t, err)
		require.False(t, ok)
	})

	t.Run("ExistsAndDelete", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ok, err := s.Exists(ctx, "a/b.json")
		require.NoError(t, err)
		require.False(t, ok)

		require.NoError(t, s.Put(ctx, "a/b.json", []byte("{}")))
		ok, err = s.Exists(ctx, "a/b.json")
		require.NoError(t, err)
		require.True(t, ok)

		require.NoError(t, s.Delete(ctx, "a/b.json"))
		ok, err = s.Exists(ctx, "a/b.json")
		require.NoError(t, err)
		require.False(t, ok)
		_, err = s.Get(ctx, "a/b.json")
		require.ErrorIs(t, err, blob.ErrNotFound)

		// Deleting again (a retried cleanup) succeeds.
		require.NoError(t, s.Delete(ctx, "a/b.json"))
		require.NoError(t, s.Delete(ctx, "never/was"))
	})

	t.Run("PutFileGetToFileMultiMB", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		src := filepath.Join(t.TempDir(), "ckpt.tar.gz")
		want := writeRandomFile(t, src, 9<<20+123)
		require.NoError(t, s.PutFile(ctx, "checkpoints/m1/weights.tar.gz", src))

		dst := filepath.Join(t.TempDir(), "nested", "dir", "weights.tar.gz")
		require.NoError(t, s.GetToFile(ctx, "checkpoints/m1/weights.tar.gz", dst))
		require.Equal(t, want, fileSHA(t, dst))
		entries, err := os.ReadDir(filepath.Dir(dst))
		require.NoError(t, err)
		require.Len(t, entries, 1, "no temp file is left behind")

		// GetToFile replaces an existing file.
		require.NoError(t, s.Put(ctx, "small", []byte("small")))
		require.NoError(t, s.GetToFile(ctx, "small", dst))
		b, err := os.ReadFile(dst)
		require.NoError(t, err)
		require.Equal(t, "small", string(b))

		require.Error(t, s.PutFile(ctx, "x", filepath.Join(t.TempDir(), "no-such-file")))
	})

	t.Run("KeyValidation", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		dst := filepath.Join(t.TempDir(), "out")
		src := filepath.Join(t.TempDir(), "in")
		require.NoError(t, os.WriteFile(src, []byte("x"), 0o644))
		for _, key := range []string{
			"", "/etc/passwd", "../escape", "a/../../b", "a/./b", "a//b", "a/",
			`a\b`, ".signing-key", "a/.hidden", "nul\x00byte", "new\nline",
			strings.Repeat("k", 2000),
		} {
			_, err := s.Get(ctx, key)
			require.ErrorIs(t, err, blob.ErrInvalidKey, "Get %q", key)
			require.ErrorIs(t, s.Put(ctx, key, []byte("x")), blob.ErrInvalidKey, "Put %q", key)
			require.ErrorIs(t, s.PutFile(ctx, key, src), blob.ErrInvalidKey, "PutFile %q", key)
			require.ErrorIs(t, s.GetToFile(ctx, key, dst), blob.ErrInvalidKey, "GetToFile %q", key)
			_, err = s.Exists(ctx, key)
			require.ErrorIs(t, err, blob.ErrInvalidKey, "Exists %q", key)
			require.ErrorIs(t, s.Delete(ctx, key), blob.ErrInvalidKey, "Delete %q", key)
			_, err = s.SignedURL(ctx, key, time.Minute)
			require.ErrorIs(t, err, blob.ErrInvalidKey, "SignedURL %q", key)
		}
	})

	t.Run("SignedURL", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		data := bytes.Repeat([]byte("reward-model "), 1000)
		require.NoError(t, s.Put(ctx, "signed/a.tar.gz", data))
		require.NoError(t, s.Put(ctx, "signed/b.tar.gz", []byte("the other object")))
		require.NoError(t, s.Put(ctx, "signed/raw.bin", []byte("raw")))
		signed, err := s.SignedURL(ctx, "signed/a.tar.gz", 5*time.Minute)
		require.NoError(t, err)

		t.Run("plain GET returns the bytes", func(t *testing.T) {
			res := get(t, signed, nil)
			require.Equal(t, http.StatusOK, res.status, res.body)
			require.Equal(t, data, []byte(res.body))
			require.Equal(t, "application/gzip", res.header.Get("Content-Type"))
			require.Equal(t, strconv.Itoa(len(data)), res.header.Get("Content-Length"))
			require.Contains(t, res.header.Get("Content-Disposition"), "attachment")
			require.Contains(t, res.header.Get("Content-Disposition"), "a.tar.gz")
		})
		t.Run("content type follows the extension", func(t *testing.T) {
			u, err := s.SignedURL(ctx, "signed/raw.bin", time.Minute)
			require.NoError(t, err)
			res := get(t, u, nil)
			require.Equal(t, http.StatusOK, res.status, res.body)
			require.Equal(t, "raw", res.body)
			require.Equal(t, "application/octet-stream", res.header.Get("Content-Type"))
		})
		t.Run("range GET resumes a download", func(t *testing.T) {
			res := get(t, signed, http.Header{"Range": {"bytes=13-25"}})
			require.Equal(t, http.StatusPartialContent, res.status, res.body)
			require.Equal(t, string(data[13:26]), res.body)
		})
		t.Run("tampered signature", func(t *testing.T) {
			u := mustParse(t, signed)
			q := u.Query()
			sig := q.Get(p.Signature)
			require.NotEmpty(t, sig)
			q.Set(p.Signature, flipHex(sig))
			u.RawQuery = q.Encode()
			require.Equal(t, http.StatusForbidden, get(t, u.String(), nil).status)
		})
		t.Run("tampered key", func(t *testing.T) {
			tampered := strings.Replace(signed, "/signed/a.tar.gz", "/signed/b.tar.gz", 1)
			require.NotEqual(t, signed, tampered)
			res := get(t, tampered, nil)
			require.Equal(t, http.StatusForbidden, res.status)
			require.NotContains(t, res.body, "the other object")
		})
		t.Run("extended expiry", func(t *testing.T) {
			u := mustParse(t, signed)
			q := u.Query()
			n, err := strconv.ParseInt(q.Get(p.Expiry), 10, 64)
			require.NoError(t, err)
			q.Set(p.Expiry, strconv.FormatInt(n+3600, 10))
			u.RawQuery = q.Encode()
			require.Equal(t, http.StatusForbidden, get(t, u.String(), nil).status)
		})
		t.Run("missing object", func(t *testing.T) {
			missing, err := s.SignedURL(ctx, "signed/never-written.tar.gz", time.Minute)
			require.NoError(t, err)
			require.Equal(t, http.StatusNotFound, get(t, missing, nil).status)
		})
		t.Run("lifetime bounds", func(t *testing.T) {
			_, err := s.SignedURL(ctx, "signed/a.tar.gz", 0)
			require.Error(t, err)
			_, err = s.SignedURL(ctx, "signed/a.tar.gz", blob.MaxSignedURLTTL+time.Hour)
			require.Error(t, err)
		})
	})

	t.Run("SignedURLExpires", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		require.NoError(t, s.Put(ctx, "short/lived.bin", []byte("soon gone")))
		signed, err := s.SignedURL(ctx, "short/lived.bin", time.Second)
		require.NoError(t, err)
		time.Sleep(2 * time.Second)
		require.Equal(t, http.StatusForbidden, get(t, signed, nil).status)
	})
}

type response struct {
	status int
	header http.Header
	body   string
}

// get is a plain GET with no credentials, like `curl -fL "$url"`.
func get(t *testing.T, u string, h http.Header) response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	require.NoError(t, err)
	maps.Copy(req.Header, h)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return response{status: res.StatusCode, header: res.Header, body: string(b)}
}

func mustParse(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	require.NoError(t, err)
	return u
}

// flipHex changes one hex digit of the signature.
func flipHex(s string) string {
	b := []byte(s)
	if b[0] == '0' {
		b[0] = '1'
	} else {
		b[0] = '0'
	}
	return string(b)
}

func writeRandomFile(t *testing.T, path string, size int64) [sha256.Size]byte {
	t.Helper()
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	h := sha256.New()
	buf := make([]byte, 1<<20)
	for left := size; left > 0; {
		n := min(int64(len(buf)), left)
		_, _ = rand.Read(buf[:n])
		_, err := f.Write(buf[:n])
		require.NoError(t, err)
		h.Write(buf[:n])
		left -= n
	}
	require.NoError(t, f.Close())
	return [sha256.Size]byte(h.Sum(nil))
}

func fileSHA(t *testing.T, path string) [sha256.Size]byte {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	h := sha256.New()
	_, err = io.Copy(h, f)
	require.NoError(t, err)
	return [sha256.Size]byte(h.Sum(nil))
}

// heapGrowth runs fn while sampling the heap, and returns the peak growth
// over the heap in use before it started.
func heapGrowth(t *testing.T, fn func()) int64 {
	t.Helper()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := int64(ms.HeapInuse)
	var peak atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if g := int64(ms.HeapInuse) - base; g > peak.Load() {
				peak.Store(g)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	})
	fn()
	close(stop)
	wg.Wait()
	return peak.Load()
}
