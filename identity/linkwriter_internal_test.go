package identity

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"
)

// TestLinkWriterGroupCommits: while one commit is in flight the links
// of the other exchanges queue and go in one commit, whose result each
// of them gets; a failed commit fails every link it held, and the
// writer takes the next ones.
func TestLinkWriterGroupCommits(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var batches [][]string
	fail := errors.New("disk full")
	w := &linkWriter{commit: func(_ context.Context, ls []TokenExchangeLink, _ time.Time) error {
		mu.Lock()
		n := len(batches)
		var ids []string
		for _, l := range ls {
			ids = append(ids, l.ChildJTI)
		}
		batches = append(batches, ids)
		mu.Unlock()
		if n == 0 {
			close(started)
			<-release
		}
		if n == 1 {
			return fail
		}
		return nil
	}}
	ctx := t.Context()
	first := make(chan error, 1)
	go func() { first <- w.write(ctx, TokenExchangeLink{ChildJTI: "c0"}, time.Time{}) }()
	<-started
	const others = 8
	errs := make(chan error, others)
	for i := 1; i <= others; i++ {
		go func() { errs <- w.write(ctx, TokenExchangeLink{ChildJTI: fmt.Sprint("c", i)}, time.Time{}) }()
	}
	for queued := 0; queued < others; runtime.Gosched() {
		w.mu.Lock()
		queued = len(w.queue)
		w.mu.Unlock()
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatalf("the first link: %v", err)
	}
	for range others {
		if err := <-errs; !errors.Is(err, fail) {
			t.Errorf("a link of the failed commit: %v, want its error", err)
		}
	}
	if err := w.write(ctx, TokenExchangeLink{ChildJTI: "last"}, time.Time{}); err != nil {
		t.Errorf("after a failed commit: %v", err)
	}
	if len(batches) != 3 || len(batches[0]) != 1 || len(batches[1]) != others || len(batches[2]) != 1 || w.busy {
		t.Errorf("batches %v (busy %v), want one link, then the %d queued in one commit, then one", batches, w.busy, others)
	}
}
