package idempotency

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/gather"
)

// Calls that arrive while a batch runs are run together in the next
// batch, each getting its own result; a failed batch fails each of its
// calls.
func TestGroupBatchesWaitingCalls(t *testing.T) {
	entered := make(chan int, 10)
	gate := make(chan struct{})
	var mu sync.Mutex
	var sizes []int
	g := &group[int, int]{run: func(_ context.Context, vs []int) ([]int, error) {
		entered <- len(vs)
		<-gate
		mu.Lock()
		sizes = append(sizes, len(vs))
		mu.Unlock()
		if vs[0] < 0 {
			return nil, errors.New("boom")
		}
		out := make([]int, len(vs))
		for i, v := range vs {
			out[i] = 2 * v
		}
		return out, nil
	}}
	ctx := context.Background()
	first := make(chan int, 1)
	go func() {
		r, _ := g.do(ctx, 1)
		first <- r
	}()
	<-entered
	const more = 8
	var wg sync.WaitGroup
	results := make([]int, more)
	for i := range more {
		wg.Go(func() { results[i], _ = g.do(ctx, 10+i) })
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		g.mu.Lock()
		n := len(g.queue)
		g.mu.Unlock()
		if n == more {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d calls queued, want %d", n, more)
		}
		runtime.Gosched()
	}
	close(gate)
	if r := <-first; r != 2 {
		t.Errorf("first = %d, want 2", r)
	}
	wg.Wait()
	for i, r := range results {
		if r != 2*(10+i) {
			t.Errorf("call %d = %d, want %d", i, r, 2*(10+i))
		}
	}
	mu.Lock()
	if len(sizes) != 2 || sizes[1] != more {
		t.Errorf("batches %v, want [1 %d]", sizes, more)
	}
	mu.Unlock()
	if _, err := g.do(ctx, -1); err == nil {
		t.Error("a failed batch's call reported no error")
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.running || len(g.queue) != 0 {
		t.Error("group left running")
	}
}

// While the processors are saturated, a leader pauses and takes the calls
// that arrived meanwhile into its batch.
func TestGroupLeaderGathersWhileBusy(t *testing.T) {
	paused, resume := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var sizes []int
	g := &group[int, int]{
		run: func(_ context.Context, vs []int) ([]int, error) {
			mu.Lock()
			sizes = append(sizes, len(vs))
			mu.Unlock()
			return vs, nil
		},
		gatherer: gather.NewForTest(func() int { return 1 << 20 }, func() { paused <- struct{}{}; <-resume }, func() time.Time { return time.Unix(0, 0) }),
	}
	step := func(what string) {
		t.Helper()
		select {
		case <-paused:
		case <-time.After(10 * time.Second):
			t.Fatalf("the leader did not pause %s", what)
		}
	}
	ctx := context.Background()
	done := make(chan int, 2)
	go func() { r, _ := g.do(ctx, 1); done <- r }()
	step("before running its batch")
	go func() { r, _ := g.do(ctx, 2); done <- r }()
	for deadline := time.Now().Add(10 * time.Second); ; runtime.Gosched() {
		g.mu.Lock()
		n := len(g.queue)
		g.mu.Unlock()
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the second call was not queued")
		}
	}
	resume <- struct{}{}
	step("again after a call arrived")
	resume <- struct{}{}
	if a, b := <-done, <-done; a+b != 3 {
		t.Fatalf("results %d and %d, want 1 and 2", a, b)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sizes) != 1 || sizes[0] != 2 {
		t.Fatalf("batches %v, want one batch of 2", sizes)
	}
}
