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
// for a bounded number of pauses.
package gather

import (
	"runtime"
	"runtime/metrics"
	"time"
)

const (
	// Pause is how long one wait lasts.
	Pause = 100 * time.Microsecond
	// MaxPauses bounds the waits before one commit (about a millisecond).
	MaxPauses = 10
	// backlogPerProc is how many runnable goroutines per processor make a
	// backlog. Measured on P1 with 8 to 64 loopback clients on 2 cores,
	// one or two per processor left the cores idle during pauses and
	// lowered throughput at 16 and 32 clients; four per processor did not
	// (docs/performance.md).
	backlogPerProc = 4
)

// A Gatherer makes a writer wait for more work while the processors are
// saturated. It is used by one goroutine at a time.
type Gatherer struct {
	busy  func() bool
	pause func()
}

// New returns a Gatherer that reads the Go scheduler's count of runnable
// goroutines and pauses for Pause.
func New() *Gatherer {
	p := &probe{sample: []metrics.Sample{{Name: "/sched/goroutines/runnable:goroutines"}}}
	return &Gatherer{busy: p.saturated, pause: func() { time.Sleep(Pause) }}
}

// NewForTest returns a Gatherer with the given backlog test and pause.
func NewForTest(busy func() bool, pause func()) *Gatherer {
	return &Gatherer{busy: busy, pause: pause}
}

// Wait pauses while the processors are saturated and full reports false;
// after each pause it calls take, which adds what arrived to the writer's
// batch and reports whether anything did. It returns when a pause brought
// nothing, when the batch is full, when the backlog is gone, or after
// MaxPauses.
func (g *Gatherer) Wait(full func() bool, take func() bool) {
	for range MaxPauses {
		if full() || !g.busy() {
			return
		}
		g.pause()
		if !take() {
			return
		}
	}
}

// probe reads the scheduler's runnable goroutines (ready to run, waiting
// for a processor).
type probe struct{ sample []metrics.Sample }

// saturated reports whether at least backlogPerProc goroutines per
// processor wait to run. On a Go without the metric it reports false, and
// writers commit at once.
func (p *probe) saturated() bool {
	metrics.Read(p.sample)
	v := p.sample[0].Value
	return v.Kind() == metrics.KindUint64 && v.Uint64() >= uint64(backlogPerProc*runtime.GOMAXPROCS(0))
}
