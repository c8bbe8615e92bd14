package blob_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/platform/blob"
)

// versitygwModule is the S3 test server: unlike gofakes3 it verifies SigV4
// signatures, so tampered and expired presigned URLs really fail.
const versitygwModule = "github.com/versity/versitygw/cmd/versitygw@v1.8.0"

const (
	vgwAccess = "critic-test-access"
	vgwSecret = "critic-test-secret-0123456789"
)

// versity is one gateway shared by every S3 test in this binary, stopped in
// TestMain.
var versity struct {
	once     sync.Once
	endpoint string
	err      error
	cmd      *exec.Cmd
	root     string
}

func TestMain(m *testing.M) {
	code := m.Run()
	if versity.cmd != nil {
		_ = versity.cmd.Process.Kill()
		_, _ = versity.cmd.Process.Wait()
	}
	if versity.root != "" {
		_ = os.RemoveAll(versity.root)
	}
	os.Exit(code)
}

// versitygwBinary finds the gateway on PATH or in $(go env GOPATH)/bin,
// installing it once if neither has it (CI reaches the Go proxy); it never
// skips silently.
func versitygwBinary() (string, error) {
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p, nil
	}
	gobin := func() string {
		if out, err := exec.Command("go", "env", "GOBIN").Output(); err == nil && strings.TrimSpace(string(out)) != "" {
			return strings.TrimSpace(string(out))
		}
		out, err := exec.Command("go", "env", "GOPATH").Output()
		if err != nil {
			return ""
		}
		return filepath.Join(strings.SplitN(strings.TrimSpace(string(out)), string(os.PathListSeparator), 2)[0], "bin")
	}()
	p := filepath.Join(gobin, "versitygw")
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	install := exec.Command("go", "install", versitygwModule)
	install.Env = append(os.Environ(), "GOFLAGS=") // not the repo's -mod=mod
	if out, err := install.CombinedOutput(); err != nil {
		return "", fmt.Errorf("versitygw is not installed and `go install %s` failed (run scripts/ensure-deps.sh, or set CRITIC_SKIP_S3=1 to skip the S3 tests): %v\n%s", versitygwModule, err, out)
	}
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("installed %s but %s is missing: %v", versitygwModule, p, err)
	}
	return p, nil
}

func startVersity() (string, error) {
	bin, err := versitygwBinary()
	if err != nil {
		return "", err
	}
	root, err := os.MkdirTemp("", "critic-versitygw-")
	if err != nil {
		return "", err
	}
	versity.root = root
	var lastErr error
	for range 3 { // the free port can be taken between probe and bind
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", err
		}
		addr := ln.Addr().String()
		ln.Close()
		var logBuf strings.Builder
		cmd := exec.Command(bin, "--access", vgwAccess, "--secret", vgwSecret, "--port", addr, "--quiet", "posix", root)
		cmd.Stdout, cmd.Stderr = &syncWriter{w: &logBuf}, &syncWriter{w: &logBuf}
		setDeathSignal(cmd)
		if err := cmd.Start(); err != nil {
			return "", fmt.Errorf("start versitygw: %w", err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		endpoint := "http://" + addr
		deadline := time.Now().Add(15 * time.Second)
		for time.Now().Before(deadline) {
			select {
			case err := <-exited:
				lastErr = fmt.Errorf("versitygw exited: %v: %s", err, logBuf.String())
				goto retry
			default:
			}
			if res, err := http.Get(endpoint + "/"); err == nil {
				res.Body.Close()
				versity.cmd = cmd
				return endpoint, nil
			}
			time.Sleep(50 * time.Millisecond)
		}
		_ = cmd.Process.Kill()
		return "", fmt.Errorf("versitygw did not answer on %s within 15s: %s", addr, logBuf.String())
	retry:
	}
	return "", lastErr
}

var bucketSeq atomic.Int64

// newS3 returns a store on a fresh bucket of the shared gateway, under a
// prefix so the prefix handling is exercised too.
func newS3(t *testing.T) *blob.S3 {
	t.Helper()
	if os.Getenv("CRITIC_SKIP_S3") == "1" {
		t.Skip("CRITIC_SKIP_S3=1")
	}
	versity.once.Do(func() { versity.endpoint, versity.err = startVersity() })
	require.NoError(t, versity.err)
	ctx := context.Background()
	bucket := fmt.Sprintf("critic-test-%d-%d", os.Getpid(), bucketSeq.Add(1))
	s, err := blob.NewS3(ctx, blob.S3Config{
		Bucket: bucket, Prefix: "deploy/a", Endpoint: versity.endpoint,
		AccessKeyID: vgwAccess, SecretAccessKey: vgwSecret,
	})
	require.NoError(t, err)
	_, err = s.Client().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &bucket})
	require.NoError(t, err)
	return s
}

func TestS3Store(t *testing.T) {
	runSuite(t, s3Params, func(t *testing.T) blob.Store { return newS3(t) })
}

func TestS3ObjectsArePrivate(t *testing.T) {
	s := newS3(t)
	ctx := context.Background()
	require.NoError(t, s.Put(ctx, "private/w.tar.gz", []byte("weights")))
	signed, err := s.SignedURL(ctx, "private/w.tar.gz", time.Minute)
	require.NoError(t, err)
	unsigned, _, _ := strings.Cut(signed, "?")
	res, err := http.Get(unsigned)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusForbidden, res.StatusCode, "only the presigned URL reaches an object")
}

func TestS3WrongCredentialsFail(t *testing.T) {
	newS3(t) // starts the gateway
	s, err := blob.NewS3(context.Background(), blob.S3Config{
		Bucket: "whatever", Endpoint: versity.endpoint, AccessKeyID: vgwAccess, SecretAccessKey: "wrong",
	})
	require.NoError(t, err)
	_, err = s.Get(context.Background(), "k")
	require.Error(t, err)
	require.NotErrorIs(t, err, blob.ErrNotFound)
}

type syncWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
