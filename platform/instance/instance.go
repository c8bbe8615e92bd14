// Package instance gives every API process an identity of its own and makes
// sure no two live processes share it. The identity names the instance's
// query-snapshot consumer group (snapshot-<id>): two instances in one group
// would each receive part of the partitions and answer SQL from part of the
// data, and the damage would outlive the mistake in their files.
package instance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// IDFile is the file in the data directory that keeps a generated id.
const IDFile = "instance-id"

// idPattern keeps ids usable as Kafka group names and in log lines.
var idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)

// Validate checks an explicitly configured id.
func Validate(id string) error {
	if !idPattern.MatchString(id) {
		return fmt.Errorf("CRITIC_INSTANCE_ID %q must be 1-100 letters, digits, '.', '_' or '-', starting with a letter or digit", id)
	}
	return nil
}

// LoadOrCreateID returns the id kept in dataDir, generating it on first use
// as <host>-<8 random hex digits>: unique per data directory (so two
// instances on one host differ), stable across restarts (so a restarted
// instance keeps its snapshots and consumer group).
func LoadOrCreateID(dataDir string) (string, error) {
	path := filepath.Join(dataDir, IDFile)
	raw, err := os.ReadFile(path)
	if err == nil {
		id := strings.TrimSpace(string(raw))
		if err := Validate(id); err != nil {
			return "", fmt.Errorf("%s: %w", path, err)
		}
		return id, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("read the instance id: %w", err)
	}
	host, _ := os.Hostname()
	host = strings.Trim(regexp.MustCompile(`[^A-Za-z0-9._-]+`).ReplaceAllString(host, "-"), "-._")
	if host == "" {
		host = "critic"
	}
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	id := fmt.Sprintf("%.80s-%s", host, hex.EncodeToString(b[:]))
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return "", fmt.Errorf("create the data directory: %w", err)
	}
	// O_EXCL: two processes starting at once on one directory agree.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return LoadOrCreateID(dataDir)
	}
	if err != nil {
		return "", fmt.Errorf("keep the instance id: %w", err)
	}
	if _, err := f.WriteString(id + "\n"); err != nil {
		_ = f.Close()
		return "", fmt.Errorf("keep the instance id: %w", err)
	}
	return id, f.Close()
}

// InUseError is a second start of a live instance id.
type InUseError struct {
	ID    string
	Host  string
	PID   int
	Addr  string
	Since time.Time
}

func (e *InUseError) Error() string {
	who := "another running instance"
	if e.Host != "" {
		who = fmt.Sprintf("the instance on host %s (pid %d, %s, running since %s)", e.Host, e.PID, e.Addr, e.Since.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("instance id %q is in use by %s: two live instances with one id would split the query snapshot "+
		"between them. Give this one its own CRITIC_INSTANCE_ID, or leave it unset and use its own CRITIC_DATA_DIR "+
		"(an id is generated there)", e.ID, who)
}

// Claim is a live instance's hold on its id: a session advisory lock on a
// connection of its own. The lock dies with that connection, so a killed
// instance frees its id as soon as PostgreSQL sees the connection close (at
// once on kill -9; for a vanished host, the server-side TCP keepalives set
// below bound it to about 20 s).
type Claim struct {
	id   string
	conn *pgx.Conn
	once sync.Once
}

// lockKey is the advisory lock key of id (hashtextextended: 64 bits).
const lockKey = `hashtextextended('critic.instance:' || $1, 0)`

// Options tune Acquire.
type Options struct {
	// Wait is how long to retry while the id is held (default 3 s): a
	// restart right after kill -9 can find the old connection not yet closed.
	Wait time.Duration
	// Host, PID and Addr describe this instance in api_instances.
	Host string
	PID  int
	Addr string
}

// Acquire claims id for this process or fails with InUseError.
func Acquire(ctx context.Context, pool *pgxpool.Pool, id string, opts Options) (*Claim, error) {
	if opts.Wait <= 0 {
		opts.Wait = 3 * time.Second
	}
	conn, err := pgx.ConnectConfig(ctx, pool.Config().ConnConfig.Copy())
	if err != nil {
		return nil, fmt.Errorf("instance: connect to claim the instance id: %w", err)
	}
	// Server-side keepalives: a host that vanishes without closing its
	// connections frees the id within seconds, not the OS's two hours. Unix
	// sockets ignore them.
	if _, err := conn.Exec(ctx, "SET tcp_keepalives_idle = 5; SET tcp_keepalives_interval = 5; SET tcp_keepalives_count = 3"); err != nil {
		_ = conn.Close(ctx)
		return nil, fmt.Errorf("instance: %w", err)
	}
	deadline := time.Now().Add(opts.Wait)
	for {
		var got bool
		if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock("+lockKey+")", id).Scan(&got); err != nil {
			_ = conn.Close(ctx)
			return nil, fmt.Errorf("instance: claim the instance id: %w", err)
		}
		if got {
			break
		}
		if time.Now().After(deadline) {
			inUse := &InUseError{ID: id}
			_ = conn.QueryRow(ctx, `SELECT host, pid, addr, started_at FROM api_instances WHERE instance_id = $1`, id).
				Scan(&inUse.Host, &inUse.PID, &inUse.Addr, &inUse.Since)
			_ = conn.Close(ctx)
			return nil, inUse
		}
		select {
		case <-ctx.Done():
			_ = conn.Close(context.Background())
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	if _, err := conn.Exec(ctx, `INSERT INTO api_instances (instance_id, host, pid, addr, started_at) VALUES ($1, $2, $3, $4, now())
		ON CONFLICT (instance_id) DO UPDATE SET host = EXCLUDED.host, pid = EXCLUDED.pid, addr = EXCLUDED.addr, started_at = now()`,
		id, opts.Host, opts.PID, opts.Addr); err != nil {
		_ = conn.Close(ctx)
		return nil, fmt.Errorf("instance: record the instance: %w", err)
	}
	return &Claim{id: id, conn: conn}, nil
}

// Alive reports whether the claim still holds: its connection answers. A
// lost connection lost the lock too, and another instance may now hold the
// id; the caller should stop serving SQL from this one.
func (c *Claim) Alive(ctx context.Context) error {
	return c.conn.Ping(ctx)
}

// Release gives the id up (the lock goes with the connection).
func (c *Claim) Release() error {
	var err error
	c.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, _ = c.conn.Exec(ctx, `DELETE FROM api_instances WHERE instance_id = $1`, c.id)
		err = c.conn.Close(ctx)
	})
	return err
}
