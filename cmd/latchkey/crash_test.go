package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/latchkey/latchkey/seal"
)

// R18 (API-cli.md, Targets): SIGKILL the command or the server in the
// middle of an import, then rerun it: every user is in exactly once, and
// every line the server answered "created" is still there. Both are real
// processes of the latchkey binary; between them a proxy reads the
// streamed results as they pass, which is how the test knows what was
// reported created and when to kill (after crashKillAfter results, not
// after a sleep).

const (
	crashUsers     = 12_000 // twelve batches of the command's 1,000
	crashKillAfter = 2_500  // "created" results seen before the SIGKILL
	crashTenant    = "CRASHCO001"
)

// buildLatchkey builds this command into a temporary directory.
func buildLatchkey(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "latchkey")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// serverProc is a `latchkey serve` process.
type serverProc struct {
	cmd    *exec.Cmd
	url    string
	stderr *syncBuffer
	exited chan error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startServe starts `latchkey serve` on data and waits until it serves.
func startServe(t *testing.T, bin, data, masterKey string) *serverProc {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--tls-addr", "", "--data", data, "--log-level", "warn")
	cmd.Env = append(os.Environ(), "PLATFORM_MASTER_KEY="+masterKey, "PLATFORM_ADMIN_PASSWORD="+adminPassword)
	p := &serverProc{cmd: cmd, stderr: &syncBuffer{}, exited: make(chan error, 1)}
	cmd.Stderr = p.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "Latchkey is serving on "); ok {
				ready <- strings.Fields(rest)[0]
			}
		}
		io.Copy(io.Discard, stdout)
		p.exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Signal(syscall.SIGTERM)
			<-p.exited
		}
	})
	select {
	case p.url = <-ready:
	case err := <-p.exited:
		t.Fatalf("serve exited before serving: %v\n%s", err, p.stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("serve did not start in 60 s\n%s", p.stderr.String())
	}
	return p
}

// kill ends the server with SIGKILL, as a crash would, and waits for it.
func (p *serverProc) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.exited
}

// importWatch is the proxy between the command and the server: it
// forwards to whichever server runs now, and reads the import's results
// on their way to the command.
type importWatch struct {
	target  atomic.Pointer[url.URL]
	mu      sync.Mutex
	created map[string]bool // ids answered "created"
	seen    atomic.Int64    // "created" results since arm
	armed   atomic.Pointer[chan struct{}]
	once    *sync.Once
}

// arm returns a channel closed once n more "created" results have passed.
func (w *importWatch) arm(n int64) <-chan struct{} {
	ch := make(chan struct{})
	w.mu.Lock()
	w.once = &sync.Once{}
	w.mu.Unlock()
	w.seen.Store(-n)
	w.armed.Store(&ch)
	return ch
}

func (w *importWatch) result(line []byte) {
	var r struct {
		Status string `json:"status"`
		ID     string `json:"id"`
	}
	if json.Unmarshal(line, &r) != nil || r.Status != "created" {
		return
	}
	w.mu.Lock()
	w.created[r.ID] = true
	once := w.once
	w.mu.Unlock()
	if w.seen.Add(1) >= 0 {
		if ch := w.armed.Load(); ch != nil {
			once.Do(func() { close(*ch) })
		}
	}
}

// watchedBody passes a response body through, handing each complete
// line to the watch.
type watchedBody struct {
	io.ReadCloser
	w    *importWatch
	line []byte
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	for _, c := range p[:n] {
		if c == '\n' {
			b.w.result(b.line)
			b.line = b.line[:0]
			continue
		}
		b.line = append(b.line, c)
	}
	return n, err
}

func (w *importWatch) start(t *testing.T) string {
	t.Helper()
	rp := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(w.target.Load()) },
		FlushInterval: -1,
		ErrorLog:      log.New(io.Discard, "", 0), // the kills cut bodies short
		ModifyResponse: func(resp *http.Response) error {
			if strings.HasSuffix(resp.Request.URL.Path, "/users/import") && resp.StatusCode == 200 {
				resp.Body = &watchedBody{ReadCloser: resp.Body, w: w}
			}
			return nil
		},
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: rp}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

func (w *importWatch) point(t *testing.T, raw string) {
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	w.target.Store(u)
}

// cli runs the command to the end and returns its exit code and output.
type cli struct {
	bin string
	env []string
}

func (c cli) start(t *testing.T, stdin string, args ...string) (*exec.Cmd, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(c.bin, args...)
	cmd.Env = c.env
	cmd.Stdin = strings.NewReader(stdin)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, out
}

func (c cli) run(t *testing.T, stdin string, args ...string) (int, string) {
	t.Helper()
	cmd, out := c.start(t, stdin, args...)
	cmd.Wait()
	return cmd.ProcessState.ExitCode(), out.String()
}

func (c cli) must(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	code, out := c.run(t, stdin, args...)
	if code != 0 {
		t.Fatalf("latchkey %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}
	return out
}

// checkEveryUserOnce lists the tenant's users through the command: each
// of the source's users exactly once, nobody else, and every id the server
// answered "created" among them.
func checkEveryUserOnce(t *testing.T, c cli, w *importWatch, n int, emailDomain string) {
	t.Helper()
	code, out := c.run(t, "", "user", "list", "--tenant", crashTenant, "-o", "json")
	if code != 0 {
		t.Fatalf("user list: exit %d\n%.2000s", code, out)
	}
	var users []struct {
		ID, Name, Email string
	}
	if err := json.Unmarshal([]byte(out), &users); err != nil {
		t.Fatalf("user list: %v\n%.2000s", err, out)
	}
	names := map[string]int{}
	ids := map[string]bool{}
	for _, u := range users {
		names[u.Name]++
		ids[u.ID] = true
		if i := strings.TrimPrefix(u.Name, "crash"); i < fmt.Sprintf("%05d", crashUsers) && u.Email != u.Name+"@"+emailDomain {
			t.Errorf("%s has email %q, want @%s", u.Name, u.Email, emailDomain)
		}
	}
	for i := range n {
		if c := names[crashName(i)]; c != 1 {
			t.Errorf("%s is there %d times", crashName(i), c)
		}
	}
	if len(users) != n {
		t.Errorf("%d users listed, want %d", len(users), n)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	lost := 0
	for id := range w.created {
		if !ids[id] {
			lost++
		}
	}
	if lost > 0 {
		t.Errorf("%d users answered \"created\" are gone", lost)
	}
	t.Logf("%d users, %d answered created so far, none lost", len(users), len(w.created))
}

func crashName(i int) string { return fmt.Sprintf("crash%05d", i) }

func TestImportSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command and runs it and its server as processes")
	}
	t.Parallel()
	dir := t.TempDir()
	bin := buildLatchkey(t)
	key := base64.StdEncoding.EncodeToString(seal.NewKey())
	data := filepath.Join(dir, "data")
	srv := startServe(t, bin, data, key)

	w := &importWatch{created: map[string]bool{}}
	w.point(t, srv.url)
	c := cli{bin: bin, env: append(os.Environ(), "LATCHKEY_URL="+w.start(t), "XDG_CONFIG_HOME="+filepath.Join(dir, "config"),
		"HOME="+dir, "CI=1", "LATCHKEY_TOKEN=", "LATCHKEY_TENANT=")}
	c.must(t, adminPassword+"\n", "login", "--name", "admin", "--password-stdin")
	c.must(t, "", "tenant", "create", "Crash", "--code", crashTenant)

	// Pre-hashed users (Keycloak's PBKDF2 form): parsed and bounded by the
	// server, never run.
	var src strings.Builder
	for i := range crashUsers {
		fmt.Fprintf(&src, `{"name":%q,"externalId":"ext-%d","email":"%s@crash.test","passwordHash":"$pbkdf2-sha256$i=27500,l=32$c2FsdHNhbHRzYWx0$%s"}`+"\n",
			crashName(i), i, crashName(i), base64.RawStdEncoding.EncodeToString(fmt.Appendf(nil, "%032d", i)))
	}
	file := filepath.Join(dir, "users.jsonl")
	if err := os.WriteFile(file, []byte(src.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	importArgs := []string{"user", "import", "--tenant", crashTenant, "--format", "jsonl", "--report", filepath.Join(dir, "report.jsonl"), file}

	waitFor := func(what string, ch <-chan struct{}, exited <-chan struct{}) {
		t.Helper()
		select {
		case <-ch:
		case <-exited:
			t.Fatalf("the import ended before %s", what)
		case <-time.After(3 * time.Minute):
			t.Fatalf("no %s in 3 minutes", what)
		}
	}

	t.Run("command killed", func(t *testing.T) {
		enough := w.arm(crashKillAfter)
		cmd, out := c.start(t, "", importArgs...)
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		waitFor(fmt.Sprintf("%d created results", crashKillAfter), enough, exited)
		cmd.Process.Kill() // while its requests are in flight
		<-exited
		if cmd.ProcessState.Success() {
			t.Fatalf("the killed import exited 0:\n%s", out.String())
		}
		if got := len(w.created); got >= crashUsers {
			t.Fatalf("all %d users were created before the kill", got)
		}
		// The rerun starts from the top: what was committed is unchanged.
		rerun := c.must(t, "", importArgs...)
		if !strings.Contains(rerun, "failed 0") || strings.Contains(rerun, "created 0,") {
			t.Errorf("rerun: %s", rerun)
		}
		checkEveryUserOnce(t, c, w, crashUsers, "crash.test")
	})

	t.Run("server killed", func(t *testing.T) {
		// A second import into the same tenant, updating every user: the
		// server is killed in the middle of it, then restarted.
		var src2 strings.Builder
		for i := range crashUsers {
			fmt.Fprintf(&src2, `{"name":%q,"externalId":"ext-%d","email":"%s@crash.example","displayName":"Crash %d"}`+"\n", crashName(i), i, crashName(i), i)
		}
		// New users too, so that "created" results pass through again.
		for i := crashUsers; i < 2*crashUsers; i++ {
			fmt.Fprintf(&src2, `{"name":%q,"externalId":"ext-%d"}`+"\n", crashName(i), i)
		}
		file2 := filepath.Join(dir, "users2.jsonl")
		if err := os.WriteFile(file2, []byte(src2.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		args := []string{"user", "import", "--tenant", crashTenant, "--format", "jsonl", "--on-conflict", "update",
			"--report", filepath.Join(dir, "report2.jsonl"), file2}
		enough := w.arm(crashKillAfter)
		cmd, out := c.start(t, "", args...)
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		waitFor(fmt.Sprintf("%d created results", crashKillAfter), enough, exited)
		srv.kill(t) // while it commits
		srv = startServe(t, bin, data, key)
		w.point(t, srv.url)
		<-exited // it resent what had no result, or gave up
		t.Logf("the import across the crash: exit %d\n%s", cmd.ProcessState.ExitCode(), lastLines(out.String(), 4))
		rerun := c.must(t, "", args...)
		if !strings.Contains(rerun, "failed 0") {
			t.Errorf("rerun: %s", rerun)
		}
		checkEveryUserOnce(t, c, w, 2*crashUsers, "crash.example")
	})
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
