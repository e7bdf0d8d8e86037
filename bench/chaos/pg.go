package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// cluster is a private PostgreSQL cluster in a temporary directory, on a
// free loopback port: the harness restarts it at will without touching any
// other server of the machine.
type cluster struct {
	bin, dir string
	port     int
	cred     *syscall.Credential // the postgres user's, when running as root
}

// findPGBin returns the directory of initdb and pg_ctl: dir when set, else
// the newest /usr/lib/postgresql/*/bin, else the PATH's.
func findPGBin(dir string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	if m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb"); len(m) > 0 {
		return filepath.Dir(m[len(m)-1]), nil
	}
	p, err := exec.LookPath("initdb")
	if err != nil {
		return "", fmt.Errorf("initdb not found: install PostgreSQL or pass -pg-bin")
	}
	return filepath.Dir(p), nil
}

// startCluster runs initdb and pg_ctl start in dir. PostgreSQL refuses to
// run as root: as root, the cluster runs as the user postgres.
func startCluster(ctx context.Context, bin, dir string) (*cluster, error) {
	c := &cluster{bin: bin, dir: dir}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running as root needs a user postgres to run the cluster: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, err
		}
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	c.port = port
	if err := c.run(ctx, "initdb", "-D", c.data(), "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8"); err != nil {
		return nil, err
	}
	if err := c.pgctl(ctx, "start"); err != nil {
		return nil, err
	}
	return c, c.exec(ctx, "postgres", `CREATE DATABASE chaos`)
}

func (c *cluster) data() string { return filepath.Join(c.dir, "data") }

// DSN is the database's address; through a proxy, give its port.
func (c *cluster) DSN(port int) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/chaos?sslmode=disable&connect_timeout=5", port)
}

func (c *cluster) run(ctx context.Context, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(c.bin, name), args...)
	cmd.Dir = c.dir
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %w\n%s", name, err, out)
	}
	return nil
}

// pgctl runs pg_ctl action (start, stop, restart) and waits for it;
// restarts and stops are immediate: a crash, as the fault is.
func (c *cluster) pgctl(ctx context.Context, action string) error {
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c max_connections=200", c.port, c.dir)
	args := []string{action, "-D", c.data(), "-w", "-t", "60", "-l", filepath.Join(c.dir, "postgres.log")}
	if action != "start" {
		args = append(args, "-m", "immediate")
	}
	if action != "stop" {
		args = append(args, "-o", opts)
	}
	return c.run(ctx, "pg_ctl", args...)
}

// Restart crashes and restarts the server (pg_ctl restart -m immediate).
func (c *cluster) Restart(ctx context.Context) error { return c.pgctl(ctx, "restart") }

// Stop stops the server.
func (c *cluster) Stop() error { return c.pgctl(context.Background(), "stop") }

// exec runs one statement on database db, directly (no proxy).
func (c *cluster) exec(ctx context.Context, db, sql string) error {
	conn, err := pgx.Connect(ctx, fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, db))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

// freePort returns a loopback port nothing listens on now.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// waitTCP waits until addr accepts connections.
func waitTCP(addr string, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}
