package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// publicURL stands for the load balancer in front of the processes: every
// process has it as its public URL, so tokens of one verify on the others.
const publicURL = "http://chaos.test"

// server is one slot of the deployment: a server process (restarted after
// each kill on the same port, with the same data directory) and the proxy
// between it and the database.
type server struct {
	name, bin, dataDir, logPath string
	port                        int
	proxy                       *proxy
	env, extra                  []string

	mu    sync.Mutex
	cmd   *exec.Cmd
	up    bool          // serving; false from a kill until the restart serves
	exit  chan struct{} // closed when the current process has exited
	start int           // starts so far
}

func (s *server) URL() string { return fmt.Sprintf("http://127.0.0.1:%d", s.port) }

// Up reports whether the process is serving (as far as the harness knows).
func (s *server) Up() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.up
}

// Start runs the process and waits until it serves (its "serving on" line)
// or limit passes. stderr is appended to the slot's log file.
func (s *server) Start(dsn string, limit time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	s.start++
	fmt.Fprintf(logf, "=== chaos: start %d of %s at %s\n", s.start, s.name, time.Now().UTC().Format(time.RFC3339Nano))
	args := append([]string{"-addr", fmt.Sprintf("127.0.0.1:%d", s.port), "-tls-addr", "", "-data", s.dataDir, "-postgres", dsn,
		"-public-url", publicURL, "-allow-private-endpoints", "-instance", s.name, "-log-level", "warn"}, s.extra...)
	cmd := exec.Command(s.bin, args...)
	cmd.Env = append(os.Environ(), s.env...)
	cmd.Stderr = logf
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return err
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	ready := make(chan struct{})
	exit := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		once := sync.Once{}
		for sc.Scan() {
			if strings.Contains(sc.Text(), "serving on") {
				once.Do(func() { close(ready) })
			}
		}
		io.Copy(io.Discard, stdout)
		cmd.Wait()
		logf.Close()
		close(exit)
	}()
	s.cmd, s.exit = cmd, exit
	select {
	case <-ready:
		s.up = true
		return nil
	case <-exit:
		return fmt.Errorf("%s exited before serving (see %s)", s.name, s.logPath)
	case <-time.After(limit):
		cmd.Process.Kill()
		return fmt.Errorf("%s did not serve within %v (see %s)", s.name, limit, s.logPath)
	}
}

// Kill sends SIGKILL, as the OOM killer does, and waits for the exit.
func (s *server) Kill() {
	s.mu.Lock()
	cmd, exit := s.cmd, s.exit
	s.up = false
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Kill()
	<-exit
}

// Stop ends the process with SIGTERM (SIGKILL after 15 s).
func (s *server) Stop() {
	s.mu.Lock()
	cmd, exit := s.cmd, s.exit
	s.up = false
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exit:
	case <-time.After(15 * time.Second):
		cmd.Process.Kill()
		<-exit
	}
}

// Ready asks GET /readyz: the process serves and its database answers.
func (s *server) Ready(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", s.URL()+"/readyz", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// buildServer builds ./examples/server of the module in dir into out.
func buildServer(dir, out string) error {
	cmd := exec.Command("go", "build", "-o", out, "./examples/server")
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./examples/server: %w\n%s", err, b)
	}
	return nil
}

// moduleRoot is the directory of the go.mod of the working directory.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", err
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("run the harness inside the Latchkey module")
	}
	return filepath.Dir(mod), nil
}

// panics returns the lines of the slot's log that show a panic or a fatal
// runtime error.
func (s *server) panics() []string {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "panic:") || strings.HasPrefix(l, "fatal error:") || strings.Contains(l, "[recovered]") || strings.Contains(l, "panic serving request") {
			out = append(out, s.name+": "+l)
		}
	}
	return out
}
