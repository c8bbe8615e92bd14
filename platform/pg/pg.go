// Package pg connects to PostgreSQL, applies the embedded migrations, and can
// run a private local cluster for single-machine deployments and tests, so
// `make run` and `make test` need nothing but the Debian package.
package pg

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/criticml/critic/migrations"
)

// Querier is what a list query needs: a pool, a connection or a transaction.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Append runs sql and appends each row, scanned with scan (pgx.RowTo[string]
// for one column), to dst: the one rows loop every list query shares. A nil
// dst stays nil when there are no rows and an empty one stays empty, so a
// list encodes in JSON as the loop it replaced encoded it.
func Append[T any](ctx context.Context, db Querier, dst []T, scan pgx.RowToFunc[T], sql string, args ...any) ([]T, error) {
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.AppendRows(dst, rows, scan)
}

// Each runs sql and calls fn after scanning each row into scans (plain
// values: the same variables are scanned into for every row): the one rows
// loop of a query that fills a map.
func Each(ctx context.Context, db Querier, scans []any, fn func() error, sql string, args ...any) error {
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return err
	}
	_, err = pgx.ForEachRow(rows, scans, fn)
	return err
}

// UUIDArg passes a uuid column's value in binary form: pgx cannot encode a
// Go string as a binary uuid, and its COPY path falls back through a
// formatted error and a text parse for every such value. A string that is not
// a uuid goes as it was, for Postgres to reject as before.
func UUIDArg(s string) any {
	u, err := uuid.Parse(s)
	if err != nil {
		return s
	}
	return pgtype.UUID{Bytes: u, Valid: true}
}

// Connect opens a pool and checks the database answers.
func Connect(ctx context.Context, url string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("DATABASE_URL: %w", err)
	}
	cfg.MaxConns = max(cfg.MaxConns, 16)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	return pool, nil
}

// Migrate applies every pending migration.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	provider, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS)
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	if _, err := provider.Up(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}
