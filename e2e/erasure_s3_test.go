package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/platform/eventstore"
)

// startVersitygw runs an S3 gateway (versitygw, the S3 tests' server) on a
// free port over a temporary directory, stopped when t ends, and returns its
// endpoint and that directory: the bucket's objects are its files.
func startVersitygw(t *testing.T, access, secret string) (endpoint, root string) {
	t.Helper()
	if os.Getenv("CRITIC_SKIP_S3") == "1" {
		t.Skip("CRITIC_SKIP_S3=1")
	}
	bin, err := exec.LookPath("versitygw")
	if err != nil {
		bin = os.ExpandEnv("$HOME/go/bin/versitygw")
	}
	_, err = os.Stat(bin)
	require.NoError(t, err, "versitygw is not installed (scripts/ensure-deps.sh), or set CRITIC_SKIP_S3=1")
	root = t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	cmd := exec.Command(bin, "--access", access, "--secret", secret, "--port", addr, "--quiet", "posix", root)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	endpoint = "http://" + addr
	require.Eventually(t, func() bool {
		res, err := http.Get(endpoint + "/")
		if err != nil {
			return false
		}
		res.Body.Close()
		return true
	}, 15*time.Second, 50*time.Millisecond, "versitygw answers")
	return endpoint, root
}

// TestErasureReachesTheS3Bucket stores a trace's large payload in an S3
// bucket (versitygw), in clear (CRITIC_ENCRYPTION=off, so the marker is
// visibly there first): deleting the trace removes it from the bucket,
// while the other trace's payload stays and reads through the API.
func TestErasureReachesTheS3Bucket(t *testing.T) {
	const access, secret = "critic-e2e-access", "critic-e2e-secret-0123456789"
	endpoint, root := startVersitygw(t, access, secret)
	ctx := context.Background()
	bucket := fmt.Sprintf("critic-erasure-%d", os.Getpid())
	s, err := blob.NewS3(ctx, blob.S3Config{Bucket: bucket, Endpoint: endpoint, AccessKeyID: access, SecretAccessKey: secret})
	require.NoError(t, err)
	_, err = s.Client().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &bucket})
	require.NoError(t, err)

	in := startServe(t, "BLOB_URL=s3://"+bucket+"/deploy", "S3_ENDPOINT="+endpoint, "AWS_ACCESS_KEY_ID="+access,
		"AWS_SECRET_ACCESS_KEY="+secret, "AWS_REGION=us-east-1", "CRITIC_ENCRYPTION=off")
	key := in.newUser("bucketeer", false)
	const gone, kept = "MARKER-S3-GONE-c41d", "MARKER-S3-KEPT-0e9b"
	big := strings.Repeat("x", eventstore.MaxInlinePayload+1024)
	trace := func(id, marker string) string {
		return `{"id":"` + id + `","steps":[{"role":"user","content":"Order ` + marker + ` ` + big + `"},` +
			`{"role":"assistant","content":"Sure."}]}`
	}
	ids := in.importTraces(key, "stash", trace("gone", gone))
	ids = append(ids, in.importTraces(key, "stash", trace("kept", kept))...)
	require.Len(t, ids, 2)
	require.NotEmpty(t, filesWith(t, root, gone), "the large payload is in the bucket")
	require.NotEmpty(t, filesWith(t, root, kept))

	r := in.do("DELETE", "/api/v1/rm/traces/"+ids[0], key, nil)
	require.Equal(t, http.StatusNoContent, r.Status, string(r.Body))
	require.Empty(t, filesWith(t, root, gone), "no object of the bucket holds the deleted trace")
	require.NotEmpty(t, filesWith(t, root, kept), "the other trace's object stays")
	tr := in.do("GET", "/api/v1/rm/traces/"+ids[1], key, nil)
	require.Equal(t, http.StatusOK, tr.Status)
	require.Contains(t, string(tr.Body), kept)
}
