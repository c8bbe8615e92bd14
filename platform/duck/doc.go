// Package duck keeps per-owner DuckDB snapshot files and runs users' read-only
// SQL against them in a locked-down, per-query in-memory DuckDB.
package duck
