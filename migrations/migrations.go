// Package migrations embeds the numbered SQL migrations so the one binary can
// migrate any database it is pointed at (`critic migrate`, and on start).
package migrations

import "embed"

// FS holds the goose migrations.
//
//go:embed *.sql
var FS embed.FS
