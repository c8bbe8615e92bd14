package e2e

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/cmd/critic/client"
)

// BenchmarkClientImport measures `make bench-client`: `critic import` of a
// folder of JSONL files (CRITIC_BENCH_CLIENT_MB megabytes across
// CRITIC_BENCH_CLIENT_FILES files; the full size is 1024 across
// 1000) against the limit: the same request bodies, encoded up front,
// posted to POST /traces/import from this process with the same
// concurrency. The reference runs before and after the client (tables
// grow between runs) and the ratio uses their mean.
func BenchmarkClientImport(b *testing.B) {
	for range b.N {
		runClientBench(b)
	}
}

func benchEnvInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	require.NoError(b, err, name)
	return n
}

func runClientBench(b *testing.B) {
	mb := benchEnvInt(b, "CRITIC_BENCH_CLIENT_MB", 64)
	files := benchEnvInt(b, "CRITIC_BENCH_CLIENT_FILES", 1000)
	const parallel = 4
	in := startServe(b)
	dir := b.TempDir()

	// Files of canonical traces with ids, ~3 KB each.
	perFile := mb << 20 / files
	var total int64
	paths := make([]string, files)
	for f := range files {
		var sb strings.Builder
		for i := 0; sb.Len() < perFile; i++ {
			sb.WriteString(fmt.Sprintf(`{"id":"f%d-t%d","metadata":{"agent":"bench"},"steps":[`, f, i))
			for j := range 20 {
				if j > 0 {
					sb.WriteByte(',')
				}
				role := []string{"user", "assistant"}[j%2]
				sb.WriteString(fmt.Sprintf(`{"role":%q,"content":"%s message %d of trace %d in file %d: the \"total\" is off by one\ncent; %s"}`, role, role, j, i, f, strings.Repeat("lorem ipsum ", 8)))
			}
			sb.WriteString("]}\n")
		}
		p := filepath.Join(dir, fmt.Sprintf("part-%04d.jsonl", f))
		require.NoError(b, os.WriteFile(p, []byte(sb.String()), 0o644))
		paths[f] = p
		total += int64(sb.Len())
	}
	mbs := float64(total) / 1e6

	// The reference's bodies: exactly what the client sends.
	var bodies [][]byte
	for _, p := range paths {
		data, err := os.ReadFile(p)
		require.NoError(b, err)
		chunks, err := client.Split("stash", data, "", client.DefaultMaxRequest)
		require.NoError(b, err)
		for _, c := range chunks {
			bodies = append(bodies, client.EncodeImport("stash", c.Data, ""))
		}
	}
	reference := func(key string) time.Duration {
		start := time.Now()
		jobs := make(chan []byte)
		errs := make(chan error, len(bodies))
		var wg sync.WaitGroup
		for range parallel {
			wg.Go(func() {
				for body := range jobs {
					if r := in.do("POST", "/api/v1/rm/traces/import", key, body); r.Status != http.StatusOK {
						errs <- fmt.Errorf("import: %d %s", r.Status, r.Body)
					}
				}
			})
		}
		for _, body := range bodies {
			jobs <- body
		}
		close(jobs)
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
		return time.Since(start)
	}

	ref1 := reference(in.newUser("bench-ref-1", false))
	key := in.newUser("bench-client", false)
	home := b.TempDir()
	cmd := exec.Command(criticBin(b), "import", dir, "--parallel", strconv.Itoa(parallel))
	cmd.Env = append(os.Environ(), "HOME="+home, "CRITIC_CONFIG_DIR="+filepath.Join(home, "critic"), "CRITIC_URL="+in.url, "CRITIC_API_KEY="+key)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	clientDur := time.Since(start)
	require.NoError(b, err, string(out))
	require.Contains(b, string(out), fmt.Sprintf("imported %d file(s)", files))
	ref2 := reference(in.newUser("bench-ref-2", false))

	refDur := (ref1 + ref2) / 2
	clientRate, refRate := mbs/clientDur.Seconds(), mbs/refDur.Seconds()
	fmt.Printf("client: %.1f MB in %d files, %d requests, %d parallel\n", mbs, files, len(bodies), parallel)
	fmt.Printf("client: critic import (whole process: read, detect, split, encode, send) %s = %.1f MB/s\n", clientDur.Round(time.Millisecond), clientRate)
	fmt.Printf("client: in-process POST /traces/import of the same bodies %s, %s (mean %s) = %.1f MB/s\n", ref1.Round(time.Millisecond), ref2.Round(time.Millisecond), refDur.Round(time.Millisecond), refRate)
	fmt.Printf("client: ratio client/in-process = %.3f (target ≥ 0.8)\n", clientRate/refRate)
}
