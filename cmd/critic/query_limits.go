package main

import (
	"cmp"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/criticml/critic/handlers/apiserver"
	"github.com/criticml/critic/platform/duck"
)

// loadQueryLimits reads the CRITIC_QUERY_* bounds of POST /query: how many
// queries run at once in the process and per account, DuckDB's memory
// budget across all of them, and the sizes of a statement and of a result.
// Unset variables keep duck's defaults; the memory budget defaults to 8 GiB
// (2 GiB per query at the default 4 slots).
func loadQueryLimits() (duck.Options, error) {
	o := duck.Options{QueryMemory: 8 << 30}
	ints := []struct {
		name string
		dst  *int
	}{
		{"CRITIC_QUERY_MAX_CONCURRENT", &o.MaxConcurrent},
		{"CRITIC_QUERY_MAX_PER_ACCOUNT", &o.MaxQueriesPerOwner},
		{"CRITIC_QUERY_MAX_SET_OPERATIONS", &o.MaxSetOperations},
	}
	for _, v := range ints {
		n, err := envInt(v.name, 0)
		if err != nil {
			return o, err
		}
		if n < 0 {
			return o, fmt.Errorf("%s must be positive, got %d", v.name, n)
		}
		*v.dst = n
	}
	sizes := []struct {
		name string
		dst  func(int64)
	}{
		{"CRITIC_QUERY_MEMORY", func(n int64) { o.QueryMemory = n }},
		{"CRITIC_QUERY_MAX_BYTES", func(n int64) { o.MaxResultBytes = int(n) }},
		{"CRITIC_QUERY_MAX_ROW_BYTES", func(n int64) { o.MaxRowBytes = int(n) }},
		{"CRITIC_QUERY_MAX_STATEMENT_BYTES", func(n int64) { o.MaxStatementBytes = int(n) }},
	}
	for _, v := range sizes {
		raw := os.Getenv(v.name)
		if raw == "" {
			continue
		}
		n, err := parseSize(raw)
		if err != nil || n <= 0 {
			return o, fmt.Errorf("%s must be a positive size in bytes, optionally with KiB, MiB or GiB (such as 16MiB), got %q", v.name, raw)
		}
		v.dst(n)
	}
	return o, nil
}

// parseSize reads "1048576", "512KiB", "16MiB" or "8GiB".
func parseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}} {
		if v, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = strings.TrimSpace(v), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, err
	}
	if n > (1<<62)/mult {
		return 0, fmt.Errorf("size %s too large", s)
	}
	return n * mult, nil
}

// queryOptions is the duck configuration of POST /query.
func (c config) queryOptions() duck.Options {
	o := c.QueryLimits
	o.Load = c.QueryIsolation
	return o
}

// queryProcess reads CRITIC_QUERY_PROCESS (on by default: the snapshots run
// in a child process under an OS memory limit, see handlers/queryhost) and
// CRITIC_QUERY_PROCESS_MEMORY, the child's limit: by default DuckDB's query
// budget plus the replica budget plus 1 GiB for the process itself.
func queryProcess(o duck.Options) (apiserver.QueryProcess, error) {
	switch v := strings.ToLower(os.Getenv("CRITIC_QUERY_PROCESS")); v {
	case "", "on", "1", "true":
	case "off", "0", "false":
		return apiserver.QueryProcess{}, nil
	default:
		return apiserver.QueryProcess{}, fmt.Errorf("CRITIC_QUERY_PROCESS must be on or off, got %q", v)
	}
	exe, err := os.Executable()
	if err != nil {
		return apiserver.QueryProcess{}, fmt.Errorf("CRITIC_QUERY_PROCESS: find this executable to start the query process: %w", err)
	}
	replicas := cmp.Or(o.ReplicaBytes, duck.DefaultReplicaBytes)
	p := apiserver.QueryProcess{Command: []string{exe, "query-host"}, MemoryLimit: o.QueryMemory + replicas + 1<<30}
	if raw := os.Getenv("CRITIC_QUERY_PROCESS_MEMORY"); raw != "" {
		n, err := parseSize(raw)
		if err != nil || n < 256<<20 {
			return p, fmt.Errorf("CRITIC_QUERY_PROCESS_MEMORY must be a size of at least 256MiB (such as 12GiB), got %q", raw)
		}
		p.MemoryLimit = n
	}
	return p, nil
}
