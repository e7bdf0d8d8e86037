package idempotency

import (
	"context"
	"sync"

	"github.com/latchkey/latchkey/internal/gather"
)

// group runs calls in shared batches without a goroutine of its own:
// the first caller to find no batch running leads; while the processors
// are saturated it waits for more calls (package gather, as audit.Recorder
// gathers records), then takes every queued call and runs them as one
// batch; when it is done, the first call queued meanwhile leads the next
// batch. Each caller returns once its own batch ran.
type group[T, R any] struct {
	run func(ctx context.Context, vs []T) ([]R, error)

	mu      sync.Mutex
	running bool
	queue   []*groupCall[T, R]
	// gatherer is used by the leader alone; nil: leaders never wait.
	gatherer *gather.Gatherer
	// answered is how many callers the last batch woke before it handed
	// the lead on: runnable then, and not a backlog of other work.
	answered int
}

type groupCall[T, R any] struct {
	v    T
	r    R
	err  error
	done chan struct{} // closed when the call's batch ran
	lead chan struct{} // closed when the call is to lead the next batch
}

// do runs v in a batch and returns its result. The batch runs under the
// leader's context without its cancellation: one caller going away does
// not fail the others.
func (g *group[T, R]) do(ctx context.Context, v T) (R, error) {
	c := &groupCall[T, R]{v: v, done: make(chan struct{}), lead: make(chan struct{})}
	g.mu.Lock()
	g.queue = append(g.queue, c)
	woken := 0
	if g.running {
		g.mu.Unlock()
		select {
		case <-c.done:
			return c.r, c.err
		case <-c.lead:
		}
		g.mu.Lock()
		woken = g.answered
	} else {
		g.running = true
	}
	seen := len(g.queue)
	g.mu.Unlock()
	// The leader waits for calls queued meanwhile while the processors are
	// saturated.
	g.gatherer.Wait(woken, func() bool { return false }, func() bool {
		g.mu.Lock()
		n := len(g.queue)
		g.mu.Unlock()
		grew := n > seen
		seen = n
		return grew
	})
	g.mu.Lock()
	batch := g.queue
	g.queue = nil
	g.mu.Unlock()
	vs := make([]T, len(batch))
	for i, b := range batch {
		vs[i] = b.v
	}
	rs, err := g.run(context.WithoutCancel(ctx), vs)
	for i, b := range batch {
		b.err = err
		if err == nil {
			b.r = rs[i]
		}
		close(b.done)
	}
	g.mu.Lock()
	g.answered = len(batch)
	if len(g.queue) > 0 {
		close(g.queue[0].lead)
	} else {
		g.running = false
	}
	g.mu.Unlock()
	return c.r, c.err
}
