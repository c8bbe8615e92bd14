package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/stretchr/testify/require"
)

// BenchmarkIngest measures `make bench-ingest`: 10,000 traces of 20 steps
// imported through the API until the read model has them, beside COPY of the
// same step rows straight into a Postgres table in the same run (the limit),
// plus the latency from a single-trace import to its visibility in GET.
func BenchmarkIngest(b *testing.B) {
	for range b.N {
		runIngestBench(b)
	}
}

func genTraces(n, steps int, prefix string) []string {
	lines := make([]string, n)
	for i := range lines {
		st := make([]map[string]any, steps)
		for j := range st {
			role := []string{"user", "assistant"}[j%2]
			st[j] = map[string]any{"role": role, "content": fmt.Sprintf("%s message %d of trace %d: %s", role, j, i, strings.Repeat("lorem ipsum ", 8))}
		}
		raw, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("%s-%d", prefix, i), "steps": st})
		lines[i] = string(raw)
	}
	return lines
}

func runIngestBench(b *testing.B) {
	profile := os.Getenv("CRITIC_BENCH_PROFILE") // a file to write the server's CPU profile of the bulk import to
	var in *instance
	if profile != "" {
		in = startServe(b, "CRITIC_PPROF_ADDR=127.0.0.1:0")
	} else {
		in = startServe(b)
	}
	key := in.newUser("bench", false)
	const traces, steps, perRequest, workers = 10000, 20, 500, 4
	lines := genTraces(traces, steps, "bench")
	ctx := context.Background()

	// The reference: COPY the same step rows (same text, fresh ids) into a
	// table shaped like rm_steps, the fastest way a client can load them
	// (uuids in binary form). It runs first, while the server is idle, so
	// nothing else competes with it (after the import the snapshot
	// projection may still be catching up).
	_, err := in.pool.Exec(ctx, "CREATE TABLE bench_steps (LIKE rm_steps INCLUDING ALL)")
	require.NoError(b, err)
	owner := pgtype.UUID{Bytes: uuid.New(), Valid: true}
	data := make([][]any, 0, traces*steps)
	for _, l := range lines {
		var t struct {
			Steps []struct{ Role, Content string } `json:"steps"`
		}
		require.NoError(b, json.Unmarshal([]byte(l), &t))
		tr := pgtype.UUID{Bytes: uuid.New(), Valid: true}
		for j, st := range t.Steps {
			data = append(data, []any{pgtype.UUID{Bytes: uuid.New(), Valid: true}, tr, owner, j, st.Role, st.Content})
		}
	}
	start := time.Now()
	_, err = in.pool.CopyFrom(ctx, pgx.Identifier{"bench_steps"}, []string{"id", "trace_id", "owner_id", "idx", "role", "content"}, pgx.CopyFromRows(data))
	require.NoError(b, err)
	copyDur := time.Since(start)
	data = nil

	// Request bodies are encoded up front, as the COPY rows were built up
	// front: the client's JSON encoding is not the server's work (on this
	// machine it would also take CPU from the server).
	var bodies [][]byte
	for i := 0; i < traces; i += perRequest {
		raw, err := json.Marshal(map[string]any{"format": "stash", "data": strings.Join(lines[i:i+perRequest], "\n")})
		require.NoError(b, err)
		bodies = append(bodies, raw)
	}

	profDone := make(chan struct{})
	if profile != "" {
		go func() {
			defer close(profDone)
			resp, err := http.Get(in.pprofURL(b) + "/debug/pprof/profile?seconds=8")
			if err == nil {
				defer resp.Body.Close()
				f, _ := os.Create(profile)
				_, _ = io.Copy(f, resp.Body)
				f.Close()
			}
		}()
	} else {
		close(profDone)
	}
	start = time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, traces/perRequest)
	jobs := make(chan []byte)
	for range workers {
		wg.Go(func() {
			for data := range jobs {
				r := in.do("POST", "/api/v1/rm/traces/import", key, data)
				if r.Status != http.StatusOK {
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
	apiDur := time.Since(start)
	<-profDone

	var n int
	require.NoError(b, in.pool.QueryRow(ctx, "SELECT count(*) FROM rm_steps").Scan(&n))
	require.Equal(b, traces*steps, n)

	apiRate := float64(traces*steps) / apiDur.Seconds()
	copyRate := float64(traces*steps) / copyDur.Seconds()
	fmt.Printf("ingest: API end to end %d traces × %d steps in %s = %.0f steps/s (%.0f traces/s)\n", traces, steps, apiDur.Round(time.Millisecond), apiRate, apiRate/steps)
	fmt.Printf("ingest: COPY of the same %d rows in %s = %.0f steps/s\n", traces*steps, copyDur.Round(time.Millisecond), copyRate)
	fmt.Printf("ingest: ratio API/COPY = %.3f (target ≥ 0.25, goal 0.5)\n", apiRate/copyRate)

	// Latency from a single-trace import to its visibility in GET /traces/{id}.
	single := genTraces(200, steps, "single")
	lat := make([]time.Duration, 0, len(single))
	for _, l := range single {
		t0 := time.Now()
		r := in.do("POST", "/api/v1/rm/traces/import", key, map[string]any{"format": "stash", "data": l})
		require.Equal(b, http.StatusOK, r.Status)
		var out struct {
			TraceIDs []string `json:"trace_ids"`
		}
		require.NoError(b, json.Unmarshal(r.Body, &out))
		g := in.do("GET", "/api/v1/rm/traces/"+out.TraceIDs[0], key, nil)
		require.Equal(b, http.StatusOK, g.Status)
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	fmt.Printf("ingest: single-trace import → visible in GET: p50 %s, p99 %s (n=%d)\n",
		lat[len(lat)/2].Round(time.Microsecond), lat[len(lat)*99/100].Round(time.Microsecond), len(lat))
}
