package authenticator

import (
	"context"
	"sync"

	"github.com/latchkey/latchkey/audit"
)

// maxBatch bounds the authenticators of one group commit.
const maxBatch = 256

// batcher group-commits authenticator creations through a BatchStore:
// a caller that finds no commit running commits every pending creation
// (its own first); callers arriving meanwhile wait and are committed by the
// next batch. No goroutine outlives the pending work.
type batcher struct {
	st      BatchStore
	audited AuditedBatchStore // st, when it can also append audit records
	mu      sync.Mutex
	pending []*createReq
	busy    bool
}

type createReq struct {
	a            Authenticator
	ok, conflict *audit.Record // appended with the creation (audited only)
	done         chan error
}

// create stores a and returns once its transaction has committed.
func (b *batcher) create(ctx context.Context, a Authenticator) error {
	return b.createAudited(ctx, a, nil, nil)
}

// createAudited is create that also appends ok or conflict, by outcome, in
// the creation's transaction; b.audited must be set when either is.
func (b *batcher) createAudited(ctx context.Context, a Authenticator, ok, conflict *audit.Record) error {
	r := &createReq{a: a, ok: ok, conflict: conflict, done: make(chan error, 1)}
	b.mu.Lock()
	b.pending = append(b.pending, r)
	if !b.busy {
		b.busy = true
		b.mu.Unlock()
		b.commitOne(context.WithoutCancel(ctx))
	} else {
		b.mu.Unlock()
	}
	select {
	case err := <-r.done:
		return err
	case <-ctx.Done():
		// The creation may still commit; the caller only stops waiting.
		return ctx.Err()
	}
}

// commitOne commits one batch of pending creations; when more are pending
// afterwards, a goroutine goes on committing them, so that this caller is
// answered after one commit however busy the store is.
func (b *batcher) commitOne(ctx context.Context) {
	b.mu.Lock()
	n := min(len(b.pending), maxBatch)
	batch := b.pending[:n:n]
	b.pending = b.pending[n:]
	b.mu.Unlock()
	as := make([]Authenticator, len(batch))
	ok, conflict := make([]*audit.Record, len(batch)), make([]*audit.Record, len(batch))
	audited := false
	for i, r := range batch {
		as[i], ok[i], conflict[i] = r.a, r.ok, r.conflict
		audited = audited || r.ok != nil || r.conflict != nil
	}
	var (
		errs []error
		err  error
	)
	if audited {
		errs, err = b.audited.CreateAuthenticatorsAudited(ctx, as, ok, conflict)
	} else {
		errs, err = b.st.CreateAuthenticators(ctx, as)
	}
	for i, r := range batch {
		if err != nil {
			r.done <- err
		} else {
			r.done <- errs[i]
		}
	}
	b.mu.Lock()
	if len(b.pending) == 0 {
		b.busy = false
		b.mu.Unlock()
		return
	}
	b.mu.Unlock()
	go b.commitOne(ctx)
}
