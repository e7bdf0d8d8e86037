package identity

import (
	"context"
	"errors"
	"sync"
	"time"
)

// linkWriter group-commits token exchange links: concurrent exchanges
// queue their links, and one of them at a time (the leader) writes
// whatever is queued in one store transaction, then answers the others.
// A link must be durable before its exchanged token is answered (else a
// revocation of the subject would miss it), but one commit per exchange
// made the link's commit cost more than the rest of the exchange's store
// work (docs/performance.md, "P21 FAPI 2.0 code exchange"). Unlike the
// audit recorder there is no goroutine of its own: the caller that finds
// no commit in flight commits, and hands the queue it leaves to the first
// caller queued behind it.
type linkWriter struct {
	commit func(ctx context.Context, ls []TokenExchangeLink, now time.Time) error

	mu    sync.Mutex
	busy  bool // a leader is committing
	queue []*linkReq
}

type linkReq struct {
	link TokenExchangeLink
	// done receives the commit's result, or errLead: the caller is now
	// the leader.
	done chan error
}

var errLead = errors.New("lead the next commit")

// write stores l with whatever else is queued and returns once it is
// committed (or the commit failed).
func (w *linkWriter) write(ctx context.Context, l TokenExchangeLink, now time.Time) error {
	r := &linkReq{link: l, done: make(chan error, 1)}
	w.mu.Lock()
	w.queue = append(w.queue, r)
	if w.busy {
		w.mu.Unlock()
		if err := <-r.done; err != errLead {
			return err
		}
		w.mu.Lock()
	}
	w.busy = true
	batch := w.queue
	w.queue = nil
	w.mu.Unlock()

	links := make([]TokenExchangeLink, len(batch))
	for i, q := range batch {
		links[i] = q.link
	}
	// The others wait on this commit: it must not end with the leader's
	// request.
	err := w.commit(context.WithoutCancel(ctx), links, now)

	w.mu.Lock()
	if len(w.queue) > 0 {
		w.queue[0].done <- errLead
	} else {
		w.busy = false
	}
	w.mu.Unlock()
	for _, q := range batch {
		if q != r {
			q.done <- err
		}
	}
	return err
}
