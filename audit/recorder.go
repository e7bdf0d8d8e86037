package audit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/latchkey/latchkey/clock"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/idempotency"
	"github.com/latchkey/latchkey/internal/gather"
	"github.com/latchkey/latchkey/internal/ids"
	"github.com/latchkey/latchkey/internal/tracing"
)

// Recorder is the Sink every area writes to. It group-commits: concurrent
// Record calls are gathered into one store transaction, and each call returns
// only once its batch is durable, so throughput is not capped by one commit
// per action while no action is answered before its record is stored.
type Recorder struct {
	store LogStore
	clock clock.Clock
	log   *slog.Logger

	queue    chan *pending
	stop     chan struct{}
	stopped  chan struct{}
	stopOnce sync.Once

	// closeMu orders enqueues before Close: Record enqueues under the read
	// lock, Close sets closed under the write lock, so after Close nothing
	// enters the queue and the loop's final drain answers everyone.
	closeMu sync.RWMutex
	closed  bool

	mu        sync.Mutex
	instances map[instanceKey]string // -> instance id

	batches, records atomic.Int64
	observer         atomic.Pointer[func(n int)]

	// gatherer makes the writer wait for more records while the
	// processors are saturated, so that more records share each commit's
	// fsync.
	gatherer *gather.Gatherer
}

// instanceKey names a tenant's service instance of one source.
type instanceKey struct{ tenantID, source string }

// RecorderStats is the recorder's work so far and its backlog.
type RecorderStats struct {
	Queued           int   // records waiting for the writer now
	Batches, Records int64 // commits and the records they held
}

// Stats reports the recorder's queue depth and commits, for metrics.
func (r *Recorder) Stats() RecorderStats {
	return RecorderStats{Queued: len(r.queue), Batches: r.batches.Load(), Records: r.records.Load()}
}

// ObserveBatches calls f with the size of each later commit (from the
// writer goroutine; f must be quick), for a batch-size histogram.
func (r *Recorder) ObserveBatches(f func(n int)) { r.observer.Store(&f) }

type pending struct {
	rec  Record
	done chan error
	// origin is the caller's span: the commit's span links to the spans
	// of the records it holds.
	origin tracing.Origin
}

// MaxBatch bounds how many records one transaction holds.
const MaxBatch = 512

// NewRecorder starts a recorder writing to store; Close stops it.
func NewRecorder(store LogStore, c clock.Clock, log *slog.Logger) *Recorder {
	return newRecorder(store, c, log, gather.New())
}

func newRecorder(store LogStore, c clock.Clock, log *slog.Logger, g *gather.Gatherer) *Recorder {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Recorder{
		store: store, clock: c, log: log,
		queue:     make(chan *pending, 4*MaxBatch),
		stop:      make(chan struct{}),
		stopped:   make(chan struct{}),
		instances: make(map[instanceKey]string),
		gatherer:  g,
	}
	go r.loop()
	return r
}

// ErrClosed is returned by Record after Close.
var ErrClosed = errors.New("audit: recorder closed")

// Builder is a Sink that can also build a record without storing it, for
// an area whose store writes the record in the same transaction as the
// change it describes (see events.AuditedAppender): the record and the
// change are then durable together or not at all, with one commit instead
// of two. A built record must be appended with LogStore.AppendAuditRecords'
// rules (Seq, PrevHash, Hash, non-decreasing Time are the store's job).
type Builder interface {
	Sink
	// Build returns the record Record would store for e, without storing
	// it. It fails as Record fails before queuing (an invalid entry, or a
	// store failure creating the tenant's service instance).
	Build(ctx context.Context, e Entry) (*Record, error)
}

var _ Builder = (*Recorder)(nil)

// Record builds the record for e (trace id and actor from ctx, a fresh trace
// id when ctx has none, time from the
// clock, resource id from the tenant's service instance) and waits until it
// is stored.
//
// When ctx's span is recording, the group commit that stores the record
// is a span of its own (audit.commit) that links to ctx's span, since one
// commit serves many requests; the wait itself is not a span (it would
// cost each request as much as the commit's span costs the batch).
func (r *Recorder) Record(ctx context.Context, e Entry) error {
	p := &pending{done: make(chan error, 1), origin: tracing.OriginOf(ctx)}
	if err := r.build(ctx, e, &p.rec); err != nil {
		return err
	}
	r.closeMu.RLock()
	if r.closed {
		r.closeMu.RUnlock()
		return ErrClosed
	}
	select {
	case r.queue <- p:
		r.closeMu.RUnlock()
	case <-ctx.Done():
		r.closeMu.RUnlock()
		return ctx.Err()
	}
	// Wait for durability even if ctx ends: the record is already queued and
	// the caller must not report success for an unrecorded action.
	return <-p.done
}

// Build implements Builder: the record for e with its trace id (a fresh
// one when ctx has none) and actor from ctx, time from the clock and resource id from the tenant's service
// instance; Seq and the hashes are left to the store.
func (r *Recorder) Build(ctx context.Context, e Entry) (*Record, error) {
	rec := new(Record)
	if err := r.build(ctx, e, rec); err != nil {
		return nil, err
	}
	return rec, nil
}

// build is Build into rec, which Record allocates inside its queue entry.
func (r *Recorder) build(ctx context.Context, e Entry, rec *Record) error {
	if e.TenantID == "" || e.Source == "" || e.Action == "" {
		return fmt.Errorf("audit: entry needs tenant, source and action: %+v", e)
	}
	mark(ctx)
	resID, err := r.instance(ctx, e.TenantID, e.Source)
	if err != nil {
		return err
	}
	actor, client := Actor(ctx)
	if e.ActorID != "" {
		actor = e.ActorID
	}
	meta := make(map[string]any, len(e.Meta)+2)
	for k, v := range e.Meta {
		meta[k] = v
	}
	if client != "" {
		if _, ok := meta["client_id"]; !ok {
			meta["client_id"] = client
		}
	}
	status := StatusSuccess
	if e.Err != nil {
		status = StatusFailed
		msg := fault.MessageOf(e.Err)
		if msg == "" {
			msg = "internal error"
		}
		meta["errorMessage"] = msg
	}
	// Every record carries a trace id (the spec's traceID, quoted to
	// support): work that no request started, and that did not pass on the
	// id of the request that did, gets a fresh one.
	trace := TraceID(ctx)
	if trace == "" {
		trace = NewTraceID()
	}
	*rec = Record{
		Time: r.clock.Now().UTC().Truncate(time.Microsecond), TenantID: e.TenantID, TraceID: trace,
		Source: e.Source, ResourceID: resID, ActorID: actor, Action: e.Action, Status: status, Meta: meta,
	}
	return nil
}

func (r *Recorder) instance(ctx context.Context, tenantID, source string) (string, error) {
	key := instanceKey{tenantID, source}
	r.mu.Lock()
	id, ok := r.instances[key]
	r.mu.Unlock()
	if ok {
		return id, nil
	}
	// Not the request's own write: it must not bind the request's
	// Idempotency-Key claim.
	si, err := r.store.EnsureServiceInstance(idempotency.Detach(ctx), NewInstance(tenantID, source, r.clock.Now()))
	if err != nil {
		return "", err
	}
	r.mu.Lock()
	r.instances[key] = si.ID
	r.mu.Unlock()
	return si.ID, nil
}

// NewInstance returns a candidate service instance of source for a tenant.
func NewInstance(tenantID, source string, now time.Time) ServiceInstance {
	kind := source
	if len(kind) > len("latchkey-") {
		kind = kind[len("latchkey-"):]
	}
	return ServiceInstance{ID: ids.NewGUID(), TenantID: tenantID, Name: kind, ServiceType: kind, Source: source, CreatedAt: now.UTC().Truncate(time.Microsecond)}
}

// EnsureInstances creates every service kind's instance for a tenant, so that
// listings show all of them before any action is recorded.
func (r *Recorder) EnsureInstances(ctx context.Context, tenantID string) error {
	for _, s := range Sources {
		if _, err := r.instance(ctx, tenantID, s); err != nil {
			return err
		}
	}
	return nil
}

func (r *Recorder) loop() {
	defer close(r.stopped)
	batch := make([]*pending, 0, MaxBatch)
	recs := make([]*Record, 0, MaxBatch)
	// woken is how many callers the last commit answered, when the next
	// record was already queued as it ended: they are runnable now, and
	// not a backlog of other work.
	woken := 0
	for {
		var first *pending
		select {
		case first = <-r.queue:
		default:
			// The queue is empty: by the time a record comes, the last
			// commit's callers have run.
			woken = 0
			select {
			case first = <-r.queue:
			case <-r.stop:
				// Drain what was queued before Close so no caller waits
				// forever.
				for {
					select {
					case p := <-r.queue:
						r.flush([]*pending{p}, recs[:0])
					default:
						return
					}
				}
			}
		}
		batch = append(batch[:0], first)
		batch = r.gather(batch, woken)
		r.flush(batch, recs[:0])
		woken = len(batch)
	}
}

// gather adds the queued records to batch, then waits for more while the
// processors are saturated (see package gather); woken callers of the last
// commit do not count as a backlog.
func (r *Recorder) gather(batch []*pending, woken int) []*pending {
	batch = r.drain(batch)
	r.gatherer.Wait(woken, func() bool { return len(batch) == MaxBatch }, func() bool {
		n := len(batch)
		batch = r.drain(batch)
		return len(batch) > n
	})
	return batch
}

// drain adds what is queued now to batch, up to MaxBatch.
func (r *Recorder) drain(batch []*pending) []*pending {
	for len(batch) < MaxBatch {
		select {
		case p := <-r.queue:
			batch = append(batch, p)
		default:
			return batch
		}
	}
	return batch
}

func (r *Recorder) flush(batch []*pending, recs []*Record) {
	for _, p := range batch {
		recs = append(recs, &p.rec)
	}
	ctx, span := r.commitSpan(batch)
	err := r.store.AppendAuditRecords(ctx, recs)
	if err != nil {
		span.SetStatus(codes.Error, "append failed")
	}
	span.End()
	if err != nil {
		r.log.ErrorContext(ctx, "audit: append failed", "records", len(recs), "err", err)
	} else {
		r.batches.Add(1)
		r.records.Add(int64(len(recs)))
		if f := r.observer.Load(); f != nil {
			(*f)(len(recs))
		}
	}
	for _, p := range batch {
		p.done <- err
	}
}

// commitSpan starts the span of a group commit (audit.commit), linked
// to the spans its records were recorded under (tracing.CommitRoot).
func (r *Recorder) commitSpan(batch []*pending) (context.Context, trace.Span) {
	return tracing.CommitRoot("audit.commit", func(yield func(tracing.Origin) bool) {
		for _, p := range batch {
			if !yield(p.origin) {
				return
			}
		}
	}, trace.WithAttributes(attribute.Int("latchkey.audit.records", len(batch))))
}

// Close stops the recorder after writing everything already queued.
func (r *Recorder) Close() {
	r.stopOnce.Do(func() {
		r.closeMu.Lock()
		r.closed = true
		r.closeMu.Unlock()
		close(r.stop)
	})
	<-r.stopped
}
