package readmodel

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAccountErasureCoversEveryTable: a read-model table added later must be
// emptied of an erased account's rows too (or be named here as holding no
// account's data), or account erasure would leave it behind.
func TestAccountErasureCoversEveryTable(t *testing.T) {
	global := []string{"rm_evaluator_benchmarks", "rm_evaluator_releases", "readmodel_applied"}
	for _, table := range Tables {
		if slices.Contains(global, table) {
			continue
		}
		require.True(t, slices.ContainsFunc(accountErasureSQL, func(q string) bool { return strings.HasPrefix(q, "DELETE FROM "+table+" ") }),
			"account.erased does not empty %s", table)
	}
}
