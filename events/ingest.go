package events

import (
	"context"
	"log/slog"
	"sync"

	"github.com/latchkey/latchkey/fault"
)

// MaxIngestBatch bounds how many events one store transaction of the
// ingester holds (a single post larger than that still goes in one).
const MaxIngestBatch = 4096

// ingester group-commits appends, as audit.Recorder does for audit
// records: concurrent callers queue their events, one goroutine gathers
// whatever is queued into one AppendEvents call, and each caller returns
// once its batch is committed. With one fsync per batch instead of per
// post, single-event posts from many clients are not capped by commit
// latency.
type ingester struct {
	store Store
	log   *slog.Logger

	queue    chan *appendReq
	stop     chan struct{}
	stopped  chan struct{}
	stopOnce sync.Once
}

type appendReq struct {
	evs  []*Event
	done chan error
}

func newIngester(store Store, log *slog.Logger) *ingester {
	in := &ingester{
		store: store, log: log,
		queue:   make(chan *appendReq, 1024),
		stop:    make(chan struct{}),
		stopped: make(chan struct{}),
	}
	go in.loop()
	return in
}

// append queues evs and waits until they are stored or the append failed.
// Once queued it waits even if ctx ends: the caller must not report a post
// as failed when its events may be stored, nor the reverse.
func (in *ingester) append(ctx context.Context, evs []*Event) error {
	r := &appendReq{evs: evs, done: make(chan error, 1)}
	select {
	case <-in.stop:
		return fault.E(fault.Unavailable, "the events service is shutting down", ErrClosed)
	default:
	}
	select {
	case in.queue <- r:
	case <-in.stop:
		return fault.E(fault.Unavailable, "the events service is shutting down", ErrClosed)
	case <-ctx.Done():
		return fault.E(fault.Unavailable, "request cancelled", ctx.Err())
	}
	return <-r.done
}

func (in *ingester) loop() {
	defer close(in.stopped)
	batch := make([]*appendReq, 0, 64)
	for {
		var first *appendReq
		select {
		case first = <-in.queue:
		case <-in.stop:
			// Append what was queued before close so that no caller
			// waits forever.
			for {
				select {
				case r := <-in.queue:
					in.flush([]*appendReq{r})
				default:
					return
				}
			}
		}
		batch = append(batch[:0], first)
		n := len(first.evs)
	gather:
		for n < MaxIngestBatch {
			select {
			case r := <-in.queue:
				batch = append(batch, r)
				n += len(r.evs)
			default:
				break gather
			}
		}
		in.flush(batch)
	}
}

// flush appends the events of batch in one transaction. If that fails and
// the batch joined several requests, each is retried alone, so that one
// request the store refuses (say a character PostgreSQL cannot store) does
// not fail the others.
func (in *ingester) flush(batch []*appendReq) {
	evs := batch[0].evs
	if len(batch) > 1 {
		evs = nil
		for _, r := range batch {
			evs = append(evs, r.evs...)
		}
	}
	err := in.store.AppendEvents(context.Background(), evs)
	if err != nil && len(batch) > 1 {
		for _, r := range batch {
			in.flush([]*appendReq{r})
		}
		return
	}
	if err != nil {
		in.log.Error("events: append failed", "events", len(evs), "err", err)
	}
	for _, r := range batch {
		r.done <- err
	}
}

func (in *ingester) close() {
	in.stopOnce.Do(func() { close(in.stop) })
	<-in.stopped
}
