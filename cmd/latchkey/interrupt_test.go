package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/latchkey/latchkey/internal/serve"
)

// TestImportInterruptedAndResumed: Ctrl-C after the first batch waits
// for the batches in flight, writes the report, prints the --skip that
// resumes and exits 130; the resumed run sends the rest, and every user is
// in exactly once.
func TestImportInterruptedAndResumed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv, err := startServer(serve.Config{Addr: "127.0.0.1:0", DataDir: filepath.Join(dir, "data"), AdminPassword: adminPassword,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.stop()
	env := map[string]string{"LATCHKEY_URL": srv.http, "XDG_CONFIG_HOME": filepath.Join(dir, "config"), "CI": "1"}
	run := func(ctx context.Context, stdin string, hook func(), args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		a := &app{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb, getenv: func(k string) string { return env[k] }, batchDone: hook}
		return a.run(ctx, args), out.String(), errb.String()
	}
	if code, _, e := run(t.Context(), adminPassword+"\n", nil, "login", "--name", "admin", "--password-stdin"); code != 0 {
		t.Fatalf("login: %d %s", code, e)
	}
	if code, _, e := run(t.Context(), "", nil, "tenant", "create", "Acme", "--code", "ACMECORP01"); code != 0 {
		t.Fatalf("tenant: %d %s", code, e)
	}
	const n = 3500 // four batches
	var src strings.Builder
	for i := range n {
		fmt.Fprintf(&src, `{"name":"u%05d","externalId":"e%d"}`+"\n", i, i)
	}
	file := filepath.Join(dir, "users.jsonl")
	if err := os.WriteFile(file, []byte(src.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	var once sync.Once
	code, out, stderr := run(ctx, "", func() { once.Do(cancel) }, "user", "import", "--tenant", "ACMECORP01", "--format", "jsonl",
		"--parallel", "1", "--report", filepath.Join(dir, "report.jsonl"), file)
	if code != exitInterrupted {
		t.Fatalf("interrupted import: exit %d\n%s%s", code, out, stderr)
	}
	m := regexp.MustCompile(`resume with --skip (\d+)`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no resume line:\n%s", stderr)
	}
	skip, _ := strconv.Atoi(m[1])
	if skip <= 0 || skip >= n || skip%importBatch != 0 {
		t.Fatalf("resume with --skip %d after the first batch of %d", skip, n)
	}
	created := regexp.MustCompile(`created (\d+)`).FindStringSubmatch(out)
	if created == nil || created[1] != m[1] {
		t.Fatalf("counted %v, resume at %d:\n%s", created, skip, out)
	}
	code, out, stderr = run(t.Context(), "", nil, "user", "import", "--tenant", "ACMECORP01", "--format", "jsonl", "--skip", m[1], file)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("created %d, updated 0, unchanged 0", n-skip)) {
		t.Fatalf("resumed import: exit %d\n%s%s", code, out, stderr)
	}
	code, out, stderr = run(t.Context(), "", nil, "user", "list", "--tenant", "ACMECORP01", "-o", "json")
	if code != 0 {
		t.Fatalf("list: %d %s", code, stderr)
	}
	if got := strings.Count(out, `"name": "u`); got != n {
		t.Fatalf("%d users listed, want %d", got, n)
	}
}
