package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/latchkey/latchkey/internal/serve"
)

// TestMain lets testscript run the latchkey command in the test binary.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"latchkey": func() { os.Exit(Main()) },
	})
}

// adminPassword is the root admin's password in every script's server.
const adminPassword = "script-admin-password-1"

// TestScripts runs testdata/script/*.txtar: each against a server of its
// own (internal/serve on 127.0.0.1:0 with SQLite in the script's work
// directory), with LATCHKEY_URL, LATCHKEY_TLS_URL, XDG_CONFIG_HOME,
// ADMIN_PASSWORD, DATA (the data directory) and FREEPORT set.
func TestScripts(t *testing.T) {
	t.Parallel()
	testscript.Run(t, scriptParams("testdata/script", ""))
}

// TestScriptsPostgres runs the same scripts with the server on
// PostgreSQL ($PLATFORM_POSTGRES_DSN, a fresh schema per script); .ci/
// postgres.sh runs it.
func TestScriptsPostgres(t *testing.T) {
	dsn := os.Getenv("PLATFORM_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("PLATFORM_POSTGRES_DSN is not set")
	}
	t.Parallel()
	testscript.Run(t, scriptParams("testdata/script", dsn))
}

func scriptParams(dir, postgresDSN string) testscript.Params {
	return testscript.Params{
		Dir:                 dir,
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			data := filepath.Join(env.WorkDir, ".data")
			cfg := serve.Config{Addr: "127.0.0.1:0", TLSAddr: "127.0.0.1:0", DataDir: data, AdminPassword: adminPassword}
			if postgresDSN != "" {
				pdsn, drop, err := postgresSchema(postgresDSN)
				if err != nil {
					return err
				}
				env.Defer(drop)
				cfg.PostgresDSN = pdsn
			}
			logf, err := os.Create(filepath.Join(env.WorkDir, ".server.log"))
			if err != nil {
				return err
			}
			cfg.Logger = slog.New(slog.NewTextHandler(logf, nil))
			srv, err := startServer(cfg)
			if err != nil {
				return err
			}
			env.Defer(func() {
				srv.stop()
				logf.Close()
			})
			env.Setenv("LATCHKEY_URL", srv.http)
			env.Setenv("LATCHKEY_TLS_URL", srv.https)
			env.Setenv("XDG_CONFIG_HOME", filepath.Join(env.WorkDir, ".config"))
			env.Setenv("HOME", env.WorkDir)
			env.Setenv("ADMIN_PASSWORD", adminPassword)
			env.Setenv("DATA", data)
			// The server's database, as migrate takes it.
			env.Setenv("STOREFLAG", "--data")
			env.Setenv("STOREARG", data)
			if cfg.PostgresDSN != "" {
				env.Setenv("STOREFLAG", "--postgres")
				env.Setenv("STOREARG", cfg.PostgresDSN)
			}
			env.Setenv("CI", "1")
			// A free port for a server the script starts itself.
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return err
			}
			env.Setenv("FREEPORT", strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
			ln.Close()
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exitcode":    cmdExitcode,
			"perm":        cmdPerm,
			"login-check": cmdLoginCheck,
			"tamper":      cmdTamper,
			"jsonget":     cmdJSONGet,
			"truncate":    cmdTruncate,
			"waithttp":    cmdWaitHTTP,
		},
	}
}

type runningServer struct {
	http, https string
	stop        func()
}

// startServer runs internal/serve in-process until stop.
func startServer(cfg serve.Config) (runningServer, error) {
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan [2]string, 1)
	done := make(chan error, 1)
	cfg.Ready = func(h, s string) { ready <- [2]string{h, s} }
	go func() { done <- serve.Run(ctx, cfg) }()
	select {
	case addrs := <-ready:
		return runningServer{http: "http://" + addrs[0], https: "https://" + addrs[1], stop: func() { cancel(); <-done }}, nil
	case err := <-done:
		cancel()
		return runningServer{}, fmt.Errorf("server exited: %v", err)
	}
}

// cmdExitcode runs a command and checks its exit code:
// exitcode N latchkey args...
func cmdExitcode(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exitcode N command args...")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exitcode: %v", err)
	}
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		got = ee.ExitCode()
	case err != nil:
		ts.Fatalf("exitcode: %v", err)
	}
	if got != want {
		ts.Fatalf("exit code %d, want %d", got, want)
	}
}

// cmdPerm checks a file's permission bits: perm FILE 0600.
func cmdPerm(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: perm FILE MODE")
	}
	want, err := strconv.ParseUint(args[1], 8, 32)
	if err != nil {
		ts.Fatalf("perm: %v", err)
	}
	st, err := os.Stat(ts.MkAbs(args[0]))
	ts.Check(err)
	if got := uint64(st.Mode().Perm()); (got == want) == neg {
		ts.Fatalf("%s: mode %04o, want %s%04o", args[0], got, map[bool]string{true: "not ", false: ""}[neg], want)
	}
}

// cmdLoginCheck logs in through the API: login-check AUTH_DOMAIN NAME
// PASSWORD (! login-check: the login must fail).
func cmdLoginCheck(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 {
		ts.Fatalf("usage: login-check AUTH_DOMAIN NAME PASSWORD")
	}
	b, _ := json.Marshal(map[string]string{"auth_domain": args[0], "name": args[1], "password": args[2]})
	resp, err := http.Post(ts.Getenv("LATCHKEY_URL")+"/api/v1/auth/tokens/", "application/json", bytes.NewReader(b))
	ts.Check(err)
	resp.Body.Close()
	if ok := resp.StatusCode == http.StatusOK; ok == neg {
		ts.Fatalf("login of %s in %s: %d", args[1], args[0], resp.StatusCode)
	}
}

// cmdTamper flips one byte of a file at an offset: tamper FILE OFFSET
// (a negative offset counts from the end).
func cmdTamper(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: tamper FILE OFFSET")
	}
	path := ts.MkAbs(args[0])
	b, err := os.ReadFile(path)
	ts.Check(err)
	off, err := strconv.Atoi(args[1])
	ts.Check(err)
	if off < 0 {
		off += len(b)
	}
	b[off] ^= 0x01
	ts.Check(os.WriteFile(path, b, 0o600))
}

// cmdJSONGet sets an environment variable from a field of the last
// command's stdout (a JSON object): jsonget VAR FIELD.
func cmdJSONGet(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: jsonget VAR FIELD")
	}
	var m map[string]any
	ts.Check(json.Unmarshal([]byte(ts.ReadFile("stdout")), &m))
	v, ok := m[args[1]]
	if !ok {
		ts.Fatalf("no field %s in stdout", args[1])
	}
	ts.Setenv(args[0], fmt.Sprint(v))
}

// cmdTruncate cuts a file to a size: truncate FILE SIZE.
func cmdTruncate(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: truncate FILE SIZE")
	}
	n, err := strconv.ParseInt(args[1], 10, 64)
	ts.Check(err)
	ts.Check(os.Truncate(ts.MkAbs(args[0]), n))
}

// cmdWaitHTTP waits until GET URL answers STATUS: waithttp URL STATUS.
// It polls a server process the script started, which a test cannot
// signal otherwise; it gives up after 60 s.
func cmdWaitHTTP(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: waithttp URL STATUS")
	}
	want, err := strconv.Atoi(args[1])
	ts.Check(err)
	deadline := time.Now().Add(60 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	last := "no answer"
	for time.Now().Before(deadline) {
		resp, err := http.Get(args[0])
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == want {
				return
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		<-tick.C
	}
	ts.Fatalf("%s: %s, want %d", args[0], last, want)
}
