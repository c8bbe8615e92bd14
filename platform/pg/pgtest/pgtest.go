// Package pgtest gives each test its own migrated database in a real local
// PostgreSQL cluster. The cluster is started once (under .data/pgtest at the
// module root, on port Port or CRITIC_TEST_PG_PORT) and shared by every test
// package of the run.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/criticml/critic/platform/pg"
)

// Port of the shared test cluster (CRITIC_TEST_PG_PORT overrides it, e.g.
// for two checkouts on one machine).
const Port = 55433

func port() int {
	if p, err := strconv.Atoi(os.Getenv("CRITIC_TEST_PG_PORT")); err == nil && p > 0 {
		return p
	}
	return Port
}

// ModuleRoot walks up from the working directory to the directory with go.mod.
func ModuleRoot(t testing.TB) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the working directory")
		}
		dir = parent
	}
}

// SharedCluster is the test cluster of the checkout at moduleRoot
// (.data/pgtest, port CRITIC_TEST_PG_PORT or Port), not started. `make test`
// uses it (scripts/pgtestctl) to stop the cluster after the run when the run
// started it. Another port gets a directory of its own (.data/pgtest-<port>),
// so runs on two ports in one checkout never fight over one data directory.
func SharedCluster(moduleRoot string) pg.Cluster {
	dir := filepath.Join(moduleRoot, ".data", "pgtest")
	if p := port(); p != Port {
		dir += "-" + strconv.Itoa(p)
	}
	return pg.Cluster{Dir: dir, Port: port(), Fast: true, Shareable: true}
}

// Cluster returns the shared test cluster, started if needed.
func Cluster(t testing.TB) pg.Cluster {
	c := SharedCluster(ModuleRoot(t))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := c.Ensure(ctx); err != nil {
		t.Fatalf("start the test PostgreSQL cluster: %v", err)
	}
	return c
}

// NewDatabase creates an empty, migrated database for one test and drops it
// when the test ends. It returns its URL.
func NewDatabase(t testing.TB) string {
	t.Helper()
	c := Cluster(t)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "t_" + hex.EncodeToString(b)
	ctx := context.Background()
	if err := c.CreateDatabase(ctx, name); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	url := c.URL(name)
	pool, err := pg.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if err := pg.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	pool.Close()
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), c.URL("postgres"))
		if err != nil {
			return
		}
		defer conn.Close(context.Background())
		_, _ = conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	})
	return url
}

// NewPool is NewDatabase plus a pool closed at the end of the test.
func NewPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	pool, err := pg.Connect(context.Background(), NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}
