package gather

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestWait(t *testing.T) {
	for _, tc := range []struct {
		name       string
		busy, full bool
		arrivals   int // pauses after which take brings something
		wantPauses int
	}{
		{name: "idle processors: no pause", busy: false, arrivals: MaxPauses, wantPauses: 0},
		{name: "full batch: no pause", busy: true, full: true, arrivals: MaxPauses, wantPauses: 0},
		{name: "a pause that brings nothing ends the wait", busy: true, arrivals: 0, wantPauses: 1},
		{name: "waits while work arrives", busy: true, arrivals: 3, wantPauses: 4},
		{name: "bounded", busy: true, arrivals: 1000, wantPauses: MaxPauses},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pauses, takes := 0, 0
			g := NewForTest(func() bool { return tc.busy }, func() { pauses++ })
			g.Wait(func() bool { return tc.full }, func() bool {
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

// The backlog stops the wait as soon as it is gone.
func TestWaitStopsWhenTheBacklogIsGone(t *testing.T) {
	backlog, pauses := 2, 0
	g := NewForTest(func() bool { backlog--; return backlog >= 0 }, func() { pauses++ })
	g.Wait(func() bool { return false }, func() bool { return true })
	if pauses != 2 {
		t.Errorf("%d pauses, want 2", pauses)
	}
}

// The probe reads the scheduler's runnable count: it reports saturation
// while many more goroutines are ready to run than there are processors.
func TestProbeSeesRunnableGoroutines(t *testing.T) {
	p := New()
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
	defer func() { stop.Store(true); wg.Wait() }()
	deadline := time.Now().Add(10 * time.Second)
	for !p.busy() {
		if time.Now().After(deadline) {
			t.Fatalf("not saturated with %d spinning goroutines", n)
		}
		runtime.Gosched()
	}
}
