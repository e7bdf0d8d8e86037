// Package gather decides how long a group-commit writer waits for more work
// before it commits.
//
// A group commit costs about the same (a transaction, an fsync) whatever it
// holds, so under load the work per commit decides the CPU per request. A
// writer that commits as soon as its queue is empty commits small batches:
// on a small machine it wakes for the first queued request and commits it
// nearly alone. Waiting for more costs no throughput while the processors
// are saturated (they run the backlog meanwhile), and only latency
// otherwise: when the backlog is short, the cores idle during the wait
// while the clients wait on the commit. So a Gatherer waits only while the
// scheduler has a backlog of runnable goroutines, a short pause at a time,
// for a bounded time.
package gather

import (
	"runtime"
	"runtime/metrics"
	"time"
)

const (
	// Pause is how long one wait asks to sleep. It lasts longer when the
	// processors go idle meanwhile (Go's timers then wake through the
	// network poller, at millisecond resolution on Linux) or when they
	// run goroutines that do not yield.
	Pause = 100 * time.Microsecond
	// MaxPauses and MaxWait bound one Wait: it pauses no more than
	// MaxPauses times and starts no pause once MaxWait has passed, so it
	// lasts at most MaxWait plus one pause.
	MaxPauses = 10
	MaxWait   = time.Millisecond
	// backlogPerProc is how many runnable goroutines per processor make a
	// backlog. Measured on P1 with 8 to 64 loopback clients on 2 cores,
	// one or two per processor left the cores idle during pauses and
	// lowered throughput at 16 and 32 clients; four per processor did not
	// (docs/performance.md).
	backlogPerProc = 4
)

// A Gatherer makes a writer wait for more work while the processors are
// saturated. It is used by one goroutine at a time. A nil Gatherer never
// waits.
type Gatherer struct {
	backlog func() int // runnable goroutines
	pause   func()
	now     func() time.Time
}

// New returns a Gatherer that reads the Go scheduler's count of runnable
// goroutines and pauses for Pause.
func New() *Gatherer {
	p := &probe{sample: []metrics.Sample{{Name: "/sched/goroutines/runnable:goroutines"}}}
	return &Gatherer{backlog: p.runnable, pause: func() { time.Sleep(Pause) }, now: time.Now}
}

// NewForTest returns a Gatherer with the given backlog count, pause and
// clock.
func NewForTest(backlog func() int, pause func(), now func() time.Time) *Gatherer {
	return &Gatherer{backlog: backlog, pause: pause, now: now}
}

// Wait pauses while the processors are saturated and full reports false;
// after each pause it calls take, which adds what arrived to the writer's
// batch and reports whether anything did. It returns when a pause brought
// nothing, when the batch is full, when the backlog is gone, or when
// MaxPauses or MaxWait is reached.
//
// woken is how many goroutines the writer itself has just made runnable
// (the callers its last commit answered, when that commit ended just
// before): they are not counted as backlog at the first check, since they
// finish quickly and would leave the cores idle during the pause.
func (g *Gatherer) Wait(woken int, full func() bool, take func() bool) {
	if g == nil {
		return
	}
	limit := backlogPerProc * runtime.GOMAXPROCS(0)
	start := g.now()
	for i := range MaxPauses {
		if full() {
			return
		}
		n := g.backlog()
		if i == 0 {
			n -= woken
		}
		if n < limit {
			return
		}
		g.pause()
		if !take() || g.now().Sub(start) >= MaxWait {
			return
		}
	}
}

// probe reads the scheduler's runnable goroutines (ready to run, waiting
// for a processor).
type probe struct{ sample []metrics.Sample }

// runnable returns the scheduler's runnable goroutines, or 0 if the
// runtime does not report them (then writers commit at once).
func (p *probe) runnable() int {
	metrics.Read(p.sample)
	if v := p.sample[0].Value; v.Kind() == metrics.KindUint64 {
		return int(min(v.Uint64(), 1<<30))
	}
	return 0
}
