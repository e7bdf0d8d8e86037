package latchkeytest

import (
	"context"
	"time"

	latchkey "github.com/latchkey/latchkey"
)

// WithArchiveDir keeps audit-export archives in dir (for example t.TempDir())
// so a test can look at the files.
func WithArchiveDir(dir string) Option {
	return func(c *latchkey.Config) { c.ArchiveDir = dir }
}

// RunExports runs one pass of the audit-export worker in the calling
// goroutine, as Platform.Run would on a wake-up, and returns how many jobs
// it finished.
func (e *Env) RunExports() int {
	e.T.Helper()
	n, err := e.Platform.Exports.RunPending(e.T.Context())
	if err != nil {
		e.T.Fatalf("RunPending: %v", err)
	}
	return n
}

// RunWorkers starts Platform.Run (the background workers) until the test
// ends. Workers wait on the fake clock, so time moves only with Advance.
func (e *Env) RunWorkers() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.Platform.Run(ctx)
	}()
	e.T.Cleanup(func() {
		cancel()
		<-done
	})
}

// AuditClient creates an OAuth client in t with role and scopes and returns
// an access token of it.
func (e *Env) AuditClient(t Tenant, role string, scopes ...string) string {
	e.T.Helper()
	id, secret := e.OAuthClient(t, role, scopes...)
	return e.AccessToken(id, secret)
}

// WaitExport waits, without sleeping, until worker passes of RunWorkers have
// run the job to a final state, checking done after each pass; it gives up
// after a real-time guard of 30 seconds.
func (e *Env) WaitExport(done func() bool) {
	e.T.Helper()
	guard := time.NewTimer(30 * time.Second)
	defer guard.Stop()
	for {
		pass := e.Platform.Exports.AfterPass()
		if done() {
			return
		}
		select {
		case <-pass:
		case <-guard.C:
			e.T.Fatal("export did not finish")
		}
	}
}
