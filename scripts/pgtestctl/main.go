// Command pgtestctl lets `make test` stop the PostgreSQL test cluster it
// started, and only that one: run `pgtestctl running` before the tests
// (prints yes or no for the cluster on CRITIC_TEST_PG_PORT), and, when it
// said no, `pgtestctl stop` when they are done. A cluster that was already
// running — another run's, or one started by hand — is left alone, and
// clusters on other ports are never looked at.
//
// CRITIC_PGTEST_DIR overrides the cluster directory (its own tests).
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/criticml/critic/platform/pg"
	"github.com/criticml/critic/platform/pg/pgtest"
)

func main() {
	if len(os.Args) != 2 || (os.Args[1] != "running" && os.Args[1] != "stop") {
		fmt.Fprintln(os.Stderr, "usage: pgtestctl running|stop")
		os.Exit(2)
	}
	c, err := cluster()
	if err != nil {
		fmt.Fprintln(os.Stderr, "pgtestctl:", err)
		os.Exit(1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	running := c.Running(ctx)
	switch os.Args[1] {
	case "running":
		fmt.Println(map[bool]string{true: "yes", false: "no"}[running])
	case "stop":
		if !running {
			return
		}
		if err := c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtestctl: stop the test cluster on port", c.Port, ":", err)
			os.Exit(1)
		}
		fmt.Println("stopped the PostgreSQL test cluster on port", c.Port, "(this run started it)")
	}
}

func cluster() (pg.Cluster, error) {
	dir, err := os.Getwd()
	if err != nil {
		return pg.Cluster{}, err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		if filepath.Dir(dir) == dir {
			return pg.Cluster{}, fmt.Errorf("go.mod not found above the working directory")
		}
		dir = filepath.Dir(dir)
	}
	c := pgtest.SharedCluster(dir)
	if d := os.Getenv("CRITIC_PGTEST_DIR"); d != "" {
		c.Dir = d
	}
	return c, nil
}
