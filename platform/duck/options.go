package duck

import (
	"cmp"
	"fmt"
	"time"
)

// Options tunes a Snapshots. The zero value gives the production settings of
// DESIGN §10; tests shorten Timeout.
type Options struct {
	// OnQuery, when set, is told how long each Query took and how it ended
	// (the query-latency metric).
	OnQuery func(elapsed time.Duration, err error) `json:"-"`
	// OnOverrun, when set, is called when a query's work goes on 5 s past
	// its deadline: DuckDB checks no interrupt while it folds constants at
	// plan time, so only ending the process stops it (the query process
	// does; in the API process nothing is set and the work runs out).
	OnOverrun func() `json:"-"`
	// Timeout bounds one query, loading included (default 10 s). On expiry
	// DuckDB is interrupted and the caller gets a ValidationError.
	Timeout time.Duration
	// MaxRows caps the rows a query returns (default 1000); more set Truncated.
	MaxRows int
	// MemoryLimit is DuckDB's memory_limit for one query sandbox (default
	// "2GB"): the copied tables and the query's working set must fit, since
	// spilling to disk is disabled (it would create files).
	MemoryLimit string
	// Threads is DuckDB's thread count per sandbox (default 2).
	Threads int
	// Load chooses how a query gets the owner's rows (default LoadReplica).
	Load LoadMode
	// Prewarm is how many blank sandboxes are kept ready (default 2; -1 for
	// none). Starting a DuckDB instance costs ~7 ms, which dominates small
	// queries; a blank instance has never held anyone's data, so handing it
	// out keeps "a fresh database per query" while taking the start off the
	// request path.
	Prewarm int
	// MaxOpenWriters bounds how many owner files stay open for writing
	// (default 32); the least recently used one is closed (checkpointed) when
	// another must open.
	MaxOpenWriters int
	// ReplicaBytes bounds the memory LoadReplica keeps in per-owner replicas
	// (default 4 GiB); the least recently used replicas are dropped beyond it.
	// One replica larger than the budget is still built for its query and
	// dropped when that query ends.
	ReplicaBytes int64
	// ReplicaIdle drops a replica nobody queried for this long (default 10
	// minutes), so a burst of queries does not pin memory for good.
	ReplicaIdle time.Duration
	// MaxQueriesPerOwner bounds concurrent queries of one owner (default
	// 2, half of MaxConcurrent); more wait for a turn within their time
	// limit.
	MaxQueriesPerOwner int
	// MaxConcurrent bounds the queries running in this process, all owners
	// together (default 4). A query that finds no free slot within
	// QueueWait is refused as unavailable (503) naming the limit, so a few
	// accounts cannot stack up memory and threads for everyone.
	MaxConcurrent int
	// QueueWait is how long a query waits for a free slot (default 1 s).
	QueueWait time.Duration
	// QueryMemory, when set, is the DuckDB memory budget in bytes of all
	// queries together: each sandbox's memory_limit becomes QueryMemory /
	// MaxConcurrent, overriding MemoryLimit (whose 2 GB default is the
	// share of an 8 GB budget over the default 4 slots).
	QueryMemory int64
	// MaxStatementBytes caps the length of the SQL text (default 64 KiB):
	// DuckDB plans outside its memory limit, and planning grows with text.
	MaxStatementBytes int
	// MaxSetOperations caps UNION/INTERSECT/EXCEPT in one statement
	// (default 64), counted in the text before DuckDB sees it: a 20,000-way
	// UNION ALL took gigabytes to plan.
	MaxSetOperations int
	// MaxResultBytes caps the JSON size of a result (default 16 MiB): rows
	// stop being read once it is passed, and the result says truncated.
	MaxResultBytes int
	// MaxRowBytes caps one row's JSON size (default 4 MiB), checked inside
	// DuckDB before the row reaches Go; a larger row fails the query (422).
	MaxRowBytes int
}

// DefaultReplicaBytes is Options.ReplicaBytes when unset.
const DefaultReplicaBytes = 4 << 30

// LoadMode says how a query gets the owner's rows. See Snapshots for the
// measurements behind the default.
type LoadMode int

const (
	// LoadReplica keeps, per owner, an in-memory DuckDB built like LoadCopy
	// (the user tables copied from the owner file, the file detached,
	// external access and the local file system disabled, configuration
	// locked) and runs each query on a fresh connection to it. The replica is
	// rebuilt on the first query after the snapshot changed, so repeated
	// queries pay no copy. Only the caller's rows are in it and nothing of the
	// file (path, `_applied`) is reachable. The default.
	LoadReplica LoadMode = iota
	// LoadCopy attaches the owner file read-only, copies the user tables into
	// a fresh sandbox's memory and detaches before the user's SQL runs, for
	// every query. Only the user tables exist afterwards: no file path,
	// no `_applied`. The strictest isolation (a new DuckDB instance per
	// query) and the slowest on large snapshots.
	LoadCopy
	// LoadAttach keeps the owner file attached read-only for the query and
	// exposes the user tables as views. It avoids the copy but the user can
	// see the file path (duckdb_databases(), the allowed_paths setting) and
	// the `_applied` event ids of their own snapshot. Kept for comparison.
	LoadAttach
)

func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.MaxRows <= 0 {
		o.MaxRows = 1000
	}
	o.MemoryLimit = cmp.Or(o.MemoryLimit, "2GB")
	if o.Threads <= 0 {
		o.Threads = 2
	}
	o.Prewarm = max(cmp.Or(o.Prewarm, 2), 0)
	if o.MaxOpenWriters <= 0 {
		o.MaxOpenWriters = 32
	}
	if o.ReplicaBytes <= 0 {
		o.ReplicaBytes = DefaultReplicaBytes
	}
	if o.ReplicaIdle <= 0 {
		o.ReplicaIdle = 10 * time.Minute
	}
	if o.MaxQueriesPerOwner <= 0 {
		o.MaxQueriesPerOwner = 2
	}
	if o.MaxConcurrent <= 0 {
		o.MaxConcurrent = 4
	}
	if o.QueryMemory > 0 {
		o.MemoryLimit = fmt.Sprintf("%dMiB", max(o.QueryMemory/int64(o.MaxConcurrent)>>20, 1))
	}
	if o.QueueWait <= 0 {
		o.QueueWait = time.Second
	}
	if o.MaxStatementBytes <= 0 {
		o.MaxStatementBytes = 64 << 10
	}
	if o.MaxSetOperations <= 0 {
		o.MaxSetOperations = 64
	}
	if o.MaxResultBytes <= 0 {
		o.MaxResultBytes = 16 << 20
	}
	if o.MaxRowBytes <= 0 {
		o.MaxRowBytes = 4 << 20
	}
	return o
}
