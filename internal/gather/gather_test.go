package gather

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeClock advances by step at each pause.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func TestWait(t *testing.T) {
	limit := backlogPerProc * runtime.GOMAXPROCS(0)
	for _, tc := range []struct {
		name       string
		backlog    int
		woken      int
		full       bool
		arrivals   int           // pauses after which take brings something
		pauseTakes time.Duration // clock advance per pause
		wantPauses int
	}{
		{name: "short backlog: no pause", backlog: limit - 1, arrivals: MaxPauses, wantPauses: 0},
		{name: "full batch: no pause", backlog: limit, full: true, arrivals: MaxPauses, wantPauses: 0},
		{name: "a pause that brings nothing ends the wait", backlog: limit, arrivals: 0, wantPauses: 1},
		{name: "waits while work arrives", backlog: limit, arrivals: 3, wantPauses: 4},
		{name: "bounded in pauses", backlog: limit, arrivals: 1000, wantPauses: MaxPauses},
		{name: "bounded in time", backlog: limit, arrivals: 1000, pauseTakes: MaxWait / 2, wantPauses: 2},
		{name: "one slow pause ends the wait", backlog: limit, arrivals: 1000, pauseTakes: 20 * time.Millisecond, wantPauses: 1},
		{name: "the writer's own callers are no backlog", backlog: limit + 5, woken: 6, arrivals: MaxPauses, wantPauses: 0},
		{name: "a backlog beyond them is", backlog: limit + 5, woken: 5, arrivals: 1, wantPauses: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := &fakeClock{t: time.Unix(0, 0)}
			pauses, takes := 0, 0
			step := tc.pauseTakes
			if step == 0 {
				step = Pause
			}
			g := NewForTest(func() int { return tc.backlog }, func() { pauses++; clk.t = clk.t.Add(step) }, clk.now)
			g.Wait(tc.woken, func() bool { return tc.full }, func() bool {
				takes++
				if takes != pauses {
					t.Fatalf("take %d after %d pauses", takes, pauses)
				}
				return takes <= tc.arrivals
			})
			if pauses != tc.wantPauses {
				t.Errorf("%d pauses, want %d", pauses, tc.wantPauses)
			}
		})
	}
}

// The wait stops as soon as the backlog is gone.
func TestWaitStopsWhenTheBacklogIsGone(t *testing.T) {
	limit := backlogPerProc * runtime.GOMAXPROCS(0)
	backlog, pauses := []int{limit, limit, 0}, 0
	g := NewForTest(func() int { n := backlog[0]; backlog = backlog[1:]; return n }, func() { pauses++ }, time.Now)
	g.Wait(0, func() bool { return false }, func() bool { return true })
	if pauses != 2 {
		t.Errorf("%d pauses, want 2", pauses)
	}
}

// The probe reads the scheduler: runnable goroutines are a backlog while
// they spin, and none is left once they stop.
func TestProbeSeesRunnableGoroutines(t *testing.T) {
	g := New()
	limit := backlogPerProc * runtime.GOMAXPROCS(0)
	var stop atomic.Bool
	var wg sync.WaitGroup
	n := 16 * runtime.GOMAXPROCS(0)
	for range n {
		wg.Go(func() {
			for !stop.Load() {
				runtime.Gosched()
			}
		})
	}
	waitFor(t, func() bool { return g.backlog() >= limit }, "a backlog with %d spinning goroutines", n)
	stop.Store(true)
	wg.Wait()
	waitFor(t, func() bool { return g.backlog() < limit }, "no backlog once they stopped")
}

func waitFor(t *testing.T, cond func() bool, format string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for "+format, args...)
		}
		runtime.Gosched()
	}
}
