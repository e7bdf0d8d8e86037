package events

import (
	"context"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/idempotency"
	"github.com/latchkey/latchkey/internal/tracing"
)

// MaxIngestBatch bounds how many events one store transaction of the
// ingester holds (a single post larger than that still goes in one).
const MaxIngestBatch = 4096

// ingestYields is how many times the ingester yields the processor, when
// its queue is empty, before committing what it has gathered: posts already
// being handled (parsed, validated) then join this commit instead of each
// paying for one of their own; on a small machine the writer otherwise
// wakes for the first queued post and commits it nearly alone. The audit
// recorder instead waits up to a millisecond while the processors are
// saturated (package gather); here that raised the posts per commit from
// 17 to 24 but not the posts per second (docs/performance.md, "P1: the
// audit writer waits while the cores are saturated"), so the ingester
// keeps its yields.
const ingestYields = 3

// ingester group-commits appends, as audit.Recorder does for audit
// records: concurrent callers queue their events, one goroutine gathers
// whatever is queued into one store transaction, and each caller returns
// once its batch is committed. With one fsync per batch instead of per
// post, single-event posts from many clients are not capped by commit
// latency.
//
// When the store is an AuditedAppender, a request may carry the audit
// record of its post, and the batch's records are appended in the same
// transaction as its events.
type ingester struct {
	store   Store
	audited AuditedAppender // nil when the store cannot append both at once
	log     *slog.Logger
	// committed, when set, is called with the events of each committed
	// batch before its callers are answered.
	committed func([]*Event)

	queue    chan *appendReq
	stop     chan struct{}
	stopped  chan struct{}
	stopOnce sync.Once

	// closeMu orders enqueues before close, as in audit.Recorder: append
	// enqueues under the read lock, close sets closed under the write lock,
	// so nothing enters the queue after the loop's final drain.
	closeMu sync.RWMutex
	closed  bool

	batches, requests, events atomic.Int64
}

type appendReq struct {
	evs  []*Event
	rec  *audit.Record // nil, or the post's audit record (audited stores only)
	done chan error
	// origin is the caller's span: the commit's span links to the spans
	// of the appends it holds.
	origin tracing.Origin
	// claims are the caller's Idempotency-Key claims: the transaction
	// that stores the events binds them (package idempotency).
	claims []*idempotency.Claim
}

func newIngester(store Store, log *slog.Logger, committed func([]*Event)) *ingester {
	in := &ingester{
		store: store, log: log, committed: committed,
		queue:   make(chan *appendReq, 1024),
		stop:    make(chan struct{}),
		stopped: make(chan struct{}),
	}
	if in.log == nil {
		in.log = slog.New(slog.DiscardHandler)
	}
	in.audited, _ = store.(AuditedAppender)
	go in.loop()
	return in
}

// IngestStats counts the ingester's work since the service started: how
// many store transactions (Batches) appended how many requests (posts and
// emits) and events. Requests/Batches is the mean group-commit size.
type IngestStats struct {
	Batches, Requests, Events int64
}

// append queues evs, and rec when not nil (only when in.audited is set),
// and waits until they are stored or the append failed. Once queued it
// waits even if ctx ends: the caller must not report a post as failed when
// its events may be stored, nor the reverse.
//
// Under a recording span the group commit that stores the events is a
// span of its own (events.commit) linked to the caller's span, as
// audit.Recorder does for records.
func (in *ingester) append(ctx context.Context, evs []*Event, rec *audit.Record) error {
	r := &appendReq{evs: evs, rec: rec, done: make(chan error, 1), origin: tracing.OriginOf(ctx), claims: idempotency.Pending(ctx)}
	in.closeMu.RLock()
	if in.closed {
		in.closeMu.RUnlock()
		return fault.E(fault.Unavailable, "the events service is shutting down", ErrClosed)
	}
	select {
	case in.queue <- r:
		in.closeMu.RUnlock()
	case <-ctx.Done():
		in.closeMu.RUnlock()
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
		for yields := 0; n < MaxIngestBatch; {
			select {
			case r := <-in.queue:
				batch = append(batch, r)
				n += len(r.evs)
				continue
			default:
			}
			if yields == ingestYields {
				break
			}
			yields++
			runtime.Gosched()
		}
		in.flush(batch)
	}
}

// flush appends the events (and audit records) of batch in one
// transaction. If the store refuses it (fault.Invalid: say a character
// PostgreSQL cannot store) and the batch joined several requests, each is
// retried alone, so that one refused request does not fail the others: a
// refused transaction stores nothing, so a retry neither loses nor
// duplicates an event; the store reassigns the IDs and sequence numbers it
// had set in place. Any other failure fails the whole batch without a
// retry: a transaction whose connection died during its commit may have
// committed, and retrying it stored its events twice (bench/chaos found
// posts stored twice after database restarts).
func (in *ingester) flush(batch []*appendReq) {
	evs := batch[0].evs
	var recs []*audit.Record
	if len(batch) > 1 {
		evs = nil
		for _, r := range batch {
			evs = append(evs, r.evs...)
		}
	}
	var claims []*idempotency.Claim
	for _, r := range batch {
		if r.rec != nil {
			recs = append(recs, r.rec)
		}
		claims = append(claims, r.claims...)
	}
	ctx, span := commitSpan(batch, len(evs))
	// The batch's transaction binds its requests' Idempotency-Key claims:
	// each post's events and its key commit together.
	ctx = idempotency.WithClaims(ctx, claims)
	var err error
	if in.audited != nil {
		err = in.audited.AppendEventsAudited(ctx, evs, recs)
	} else {
		err = in.store.AppendEvents(ctx, evs)
	}
	if err != nil {
		span.SetStatus(codes.Error, "append failed")
	}
	span.End()
	if err != nil && len(batch) > 1 && fault.KindOf(err) == fault.Invalid {
		for _, r := range batch {
			in.flush([]*appendReq{r})
		}
		return
	}
	if err != nil {
		in.log.Error("events: append failed", "events", len(evs), "records", len(recs), "err", err)
	} else {
		in.batches.Add(1)
		in.requests.Add(int64(len(batch)))
		in.events.Add(int64(len(evs)))
		if in.committed != nil {
			in.committed(evs)
		}
	}
	for _, r := range batch {
		r.done <- err
	}
}

// commitSpan starts the span of a group commit of n events
// (events.commit), linked to the spans of its requests
// (tracing.CommitRoot).
func commitSpan(batch []*appendReq, n int) (context.Context, trace.Span) {
	return tracing.CommitRoot("events.commit", func(yield func(tracing.Origin) bool) {
		for _, r := range batch {
			if !yield(r.origin) {
				return
			}
		}
	}, trace.WithAttributes(attribute.Int("latchkey.events.count", n), attribute.Int("latchkey.events.requests", len(batch))))
}

func (in *ingester) stats() IngestStats {
	return IngestStats{Batches: in.batches.Load(), Requests: in.requests.Load(), Events: in.events.Load()}
}

func (in *ingester) close() {
	in.stopOnce.Do(func() {
		in.closeMu.Lock()
		in.closed = true
		in.closeMu.Unlock()
		close(in.stop)
	})
	<-in.stopped
}
