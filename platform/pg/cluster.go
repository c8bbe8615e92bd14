package pg

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// Cluster is a local PostgreSQL cluster in a directory of ours.
type Cluster struct {
	Dir  string
	Port int
	// Fast turns off fsync: for test clusters, never for data a user keeps.
	Fast bool
	// Shareable accepts a server already on Port whatever its data directory
	// (test clusters: every test works in a database of its own). Otherwise a
	// foreign server on the port is an error.
	Shareable bool
}

// URL is the connection string of database db in the cluster.
func (c Cluster) URL(db string) string {
	return fmt.Sprintf("postgres://critic@127.0.0.1:%d/%s?sslmode=disable", c.Port, db)
}

// Ensure initialises the cluster if the directory is empty, starts it if it is
// not running, and waits until it accepts connections. Concurrent callers
// (parallel test packages) serialize on a lock file. PostgreSQL refuses to run
// as root, so as root the server runs as the `postgres` system user.
func (c Cluster) Ensure(ctx context.Context) error {
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return err
	}
	lock, err := os.OpenFile(filepath.Join(c.Dir, "cluster.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)

	if c.Running(ctx) {
		if c.Shareable {
			return nil
		}
		return c.checkOwnServer(ctx)
	}
	bin, runAs, serverDir, err := c.server()
	if err != nil {
		return err
	}
	data := filepath.Join(serverDir, "data")
	if _, err := os.Stat(filepath.Join(data, "PG_VERSION")); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(data, 0o700); err != nil {
			return err
		}
		if err := chownTo(runAs, serverDir, data); err != nil {
			return err
		}
		out, err := command(runAs, filepath.Join(bin, "initdb"), "-D", data, "-U", "critic", "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8").CombinedOutput()
		if err != nil {
			return fmt.Errorf("initdb: %v: %s", err, out)
		}
	}
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -c port=%d -c unix_socket_directories='' -c max_connections=400 -c shared_buffers=256MB", c.Port)
	if c.Fast {
		opts += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
	}
	logFile := filepath.Join(serverDir, "postgres.log")
	if err := chownTo(runAs, serverDir); err != nil {
		return err
	}
	// A stale pid file from a killed server blocks a start; pg_ctl handles it
	// when the pid is dead.
	out, err := command(runAs, filepath.Join(bin, "pg_ctl"), "-D", data, "-l", logFile, "-o", opts, "-w", "-t", "60", "start").CombinedOutput()
	if err != nil && !c.Running(ctx) {
		logTail, _ := os.ReadFile(logFile)
		if len(logTail) > 2000 {
			logTail = logTail[len(logTail)-2000:]
		}
		return fmt.Errorf("pg_ctl start: %v: %s\n%s", err, out, logTail)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !c.Running(ctx) {
		if time.Now().After(deadline) {
			return fmt.Errorf("PostgreSQL in %s did not accept connections on port %d", c.Dir, c.Port)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

// CreateDatabase creates db if it does not exist.
func (c Cluster) CreateDatabase(ctx context.Context, db string) error {
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", db).Scan(&exists); err != nil {
		return err
	}
	if exists {
		return nil
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{db}.Sanitize())
	return err
}

// server is where the PostgreSQL binaries are, the user the server runs
// as, and the cluster's directory: what starting and stopping it need.
func (c Cluster) server() (bin, runAs, serverDir string, err error) {
	if bin, err = binDir(); err != nil {
		return
	}
	if runAs, err = serverUser(); err != nil {
		return
	}
	serverDir, err = c.serverDir()
	return
}

// Stop shuts the cluster down (fast mode: running transactions are rolled back).
func (c Cluster) Stop() error {
	bin, runAs, serverDir, err := c.server()
	if err != nil {
		return err
	}
	out, err := command(runAs, filepath.Join(bin, "pg_ctl"), "-D", filepath.Join(serverDir, "data"), "-m", "fast", "-w", "stop").CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctl stop: %v: %s", err, out)
	}
	return nil
}

// checkOwnServer refuses a server on our port that runs someone else's data
// directory (another checkout, a system cluster): silently sharing it would
// mix two installations' data.
func (c Cluster) checkOwnServer(ctx context.Context) error {
	dir, err := c.serverDir()
	if err != nil {
		return err
	}
	want, _ := filepath.Abs(filepath.Join(dir, "data"))
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var got string
	if err := conn.QueryRow(ctx, "SHOW data_directory").Scan(&got); err != nil {
		return err
	}
	if filepath.Clean(got) != filepath.Clean(want) {
		return fmt.Errorf("port %d is taken by another PostgreSQL (data directory %s, not %s): stop it or choose another port (CRITIC_PG_PORT, or CRITIC_TEST_PG_PORT for tests)", c.Port, got, want)
	}
	return nil
}

// serverDir is where the server's files live: Dir itself, unless we run as
// root and the `postgres` user cannot reach Dir (a checkout under /root,
// mode 0700). Then the files go to a directory of their own under
// /var/lib/critic named after Dir, and Dir keeps a note saying where.
func (c Cluster) serverDir() (string, error) {
	if os.Geteuid() != 0 || reachableByOthers(c.Dir) {
		return c.Dir, nil
	}
	abs, err := filepath.Abs(c.Dir)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(abs))
	dir := filepath.Join("/var/lib/critic", "pg-"+hex.EncodeToString(sum[:6]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := os.Chmod("/var/lib/critic", 0o755); err != nil {
		return "", err
	}
	note := "PostgreSQL's files for this cluster are in " + dir + ": the postgres user cannot reach this directory.\n"
	_ = os.WriteFile(filepath.Join(c.Dir, "WHERE-IS-THE-DATA.txt"), []byte(note), 0o644)
	return dir, nil
}

// reachableByOthers reports whether every directory from / down to dir can
// be traversed by other users (the postgres server runs as another user).
func reachableByOthers(dir string) bool {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	for p := abs; ; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if err != nil || st.Mode().Perm()&0o001 == 0 {
			return false
		}
		if p == filepath.Dir(p) {
			return true
		}
	}
}

// Running reports whether a PostgreSQL server accepts connections on the
// cluster's port (whoever started it).
func (c Cluster) Running(ctx context.Context) bool {
	d := net.Dialer{Timeout: 500 * time.Millisecond}
	nc, err := d.DialContext(ctx, "tcp", fmt.Sprintf("127.0.0.1:%d", c.Port))
	if err != nil {
		return false
	}
	nc.Close()
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := pgx.Connect(cctx, c.URL("postgres"))
	if err != nil {
		return false
	}
	conn.Close(cctx)
	return true
}

// serverUser is who runs the server's tools: ourselves, or as root the
// `postgres` system user (PostgreSQL refuses to run as root).
func serverUser() (string, error) {
	if os.Geteuid() != 0 {
		return "", nil
	}
	if _, err := user.Lookup("postgres"); err != nil {
		return "", fmt.Errorf("running as root needs the 'postgres' system user (install the postgresql package): %w", err)
	}
	return "postgres", nil
}

func command(runAs, name string, args ...string) *exec.Cmd {
	if runAs == "" {
		return exec.Command(name, args...)
	}
	return exec.Command("runuser", append([]string{"-u", runAs, "--", name}, args...)...)
}

func chownTo(runAs string, paths ...string) error {
	if runAs == "" {
		return nil
	}
	u, err := user.Lookup(runAs)
	if err != nil {
		return err
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	for _, p := range paths {
		if err := os.Chown(p, uid, gid); err != nil {
			return err
		}
	}
	return nil
}

// binDir finds the newest installed PostgreSQL server binaries.
func binDir() (string, error) {
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Slice(matches, func(i, j int) bool {
		vi, _ := strconv.Atoi(strings.Split(matches[i], "/")[4])
		vj, _ := strconv.Atoi(strings.Split(matches[j], "/")[4])
		return vi > vj
	})
	if len(matches) > 0 {
		return filepath.Dir(matches[0]), nil
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("PostgreSQL server binaries not found: install the Debian package 'postgresql' (make run does this) or set DATABASE_URL")
}
