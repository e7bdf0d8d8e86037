package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"runtime"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/latchkey/latchkey/internal/tracing"
)

// tracedConn is the Conn a Store uses: the driver's Conn, whose
// transactions are each a span when the caller's span is recording, so
// that store work is traced once here for both databases. A transaction
// is a Tx, a Pipeline, a Batch (one snapshot, or one round trip of
// writes) or a single statement on Write (it commits on its own). Single
// reads outside a transaction (Read's Query and QueryRow) are not spans:
// they are the most frequent store calls (a token check, a tenant
// lookup), a span costs about as much as a point read, and their time
// shows in the span that made them. The span is
// named after the exported Store method that runs it
// ("store.AppendAuditRecords"): a name from the code, never from the
// data, so the set of names is bounded. When the caller's span is not
// recording (tracing off, or the request not sampled) a call costs one
// context lookup more than the driver's own.
type tracedConn struct {
	Conn
	system      attribute.KeyValue // db.system.name
	read, write Querier
	// names caches, by program counter, the span name of the exported
	// Store method a frame belongs to ("" for any other frame).
	names sync.Map // uintptr -> string
}

func newTracedConn(c Conn, dialect string) *tracedConn {
	system := semconv.DBSystemNameKey.String(dialect)
	switch dialect {
	case "sqlite":
		system = semconv.DBSystemNameSQLite
	case "postgres":
		system = semconv.DBSystemNamePostgreSQL
	}
	t := &tracedConn{Conn: c, system: system}
	t.read = &tracedQuerier{q: c.Read(), c: t}
	t.write = &tracedQuerier{q: c.Write(), c: t, write: true}
	return t
}

func (t *tracedConn) Read() Querier  { return t.read }
func (t *tracedConn) Write() Querier { return t.write }

func (t *tracedConn) Tx(ctx context.Context, fn func(Querier) error) error {
	ctx, span := t.start(ctx, "tx")
	if !span.IsRecording() {
		return t.Conn.Tx(ctx, fn)
	}
	attempts := 0
	err := t.Conn.Tx(ctx, func(q Querier) error {
		attempts++
		return fn(q)
	})
	if attempts > 1 {
		span.SetAttributes(attribute.Int("latchkey.store.attempts", attempts))
	}
	return end(span, err)
}

func (t *tracedConn) Pipeline(ctx context.Context, first, second func(*Batch)) error {
	ctx, span := t.start(ctx, "pipeline")
	if !span.IsRecording() {
		return t.Conn.Pipeline(ctx, first, second)
	}
	n := 0
	err := t.Conn.Pipeline(ctx, func(b *Batch) {
		first(b)
		n = len(b.Items)
	}, func(b *Batch) {
		second(b)
		span.SetAttributes(semconv.DBOperationBatchSize(n + len(b.Items)))
	})
	return end(span, err)
}

// start starts the span of one call of kind ("tx", "pipeline", "batch",
// "query", "exec") when ctx's span is recording.
func (t *tracedConn) start(ctx context.Context, kind string) (context.Context, trace.Span) {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return ctx, noSpan
	}
	ctx, span := tracing.Start(ctx, t.method(), trace.WithSpanKind(trace.SpanKindClient))
	span.SetAttributes(t.system, attribute.String("latchkey.store.call", kind))
	return ctx, span
}

// noSpan is the API's no-op span, returned when nothing is traced.
var noSpan = trace.SpanFromContext(context.Background())

// end ends span with err's outcome and returns err.
func end(span trace.Span, err error) error {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, "")
	}
	span.End()
	return err
}

// tracedQuerier is a pool Querier (Conn.Read, Conn.Write) whose
// transactions are spans as tracedConn's: every call on Write, batches
// on Read.
type tracedQuerier struct {
	q     Querier
	c     *tracedConn
	write bool
}

func (t *tracedQuerier) Query(ctx context.Context, query string, args ...any) (Rows, error) {
	if !t.write {
		return t.q.Query(ctx, query, args...)
	}
	ctx, span := t.c.start(ctx, "query")
	if !span.IsRecording() {
		return t.q.Query(ctx, query, args...)
	}
	rows, err := t.q.Query(ctx, query, args...)
	if err != nil {
		return nil, end(span, err)
	}
	return &tracedRows{Rows: rows, span: span}, nil
}

func (t *tracedQuerier) QueryRow(ctx context.Context, query string, args ...any) Row {
	if !t.write {
		return t.q.QueryRow(ctx, query, args...)
	}
	ctx, span := t.c.start(ctx, "query")
	if !span.IsRecording() {
		return t.q.QueryRow(ctx, query, args...)
	}
	return &tracedRow{row: t.q.QueryRow(ctx, query, args...), span: span}
}

func (t *tracedQuerier) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	ctx, span := t.c.start(ctx, "exec")
	if !span.IsRecording() {
		return t.q.Exec(ctx, query, args...)
	}
	n, err := t.q.Exec(ctx, query, args...)
	return n, end(span, err)
}

func (t *tracedQuerier) Batch(ctx context.Context, b *Batch) error {
	ctx, span := t.c.start(ctx, "batch")
	if !span.IsRecording() {
		return t.q.Batch(ctx, b)
	}
	span.SetAttributes(semconv.DBOperationBatchSize(len(b.Items)))
	return end(span, t.q.Batch(ctx, b))
}

// tracedRows ends its span when the rows are closed.
type tracedRows struct {
	Rows
	span   trace.Span
	closed bool
}

func (r *tracedRows) Close() {
	r.Rows.Close()
	if r.closed {
		return
	}
	r.closed = true
	if r.Rows.Err() != nil {
		r.span.SetStatus(codes.Error, "")
	}
	r.span.End()
}

// tracedRow ends its span when the row is scanned. A missing row is the
// answer to a question, not an error of the store.
type tracedRow struct {
	row  Row
	span trace.Span
}

func (r *tracedRow) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	if err != nil && !isNoRows(err) {
		r.span.SetStatus(codes.Error, "")
	}
	r.span.End()
	return err
}

// storeMethodPrefix is how the runtime names a method of *Store.
const storeMethodPrefix = "github.com/latchkey/latchkey/store/sqlstore.(*Store)."

// method returns the span name of the exported Store method on the
// caller's stack ("store.AppendAuditRecords"), or "store" when there is
// none. It is called only for recording spans. Each frame is resolved
// once; the stack is walked two frames deep first (the Store method
// itself, or a helper such as list or exec and the method above it),
// which names nearly every call, and deeper only when that fails.
func (t *tracedConn) method() string {
	var pcs [12]uintptr
	for _, depth := range []int{2, len(pcs)} {
		// Skip runtime.Callers, method, start and the Conn or Querier
		// method: the first frame is the store code that called it.
		n := runtime.Callers(4, pcs[:depth])
		for _, pc := range pcs[:n] {
			if name := t.frameName(pc); name != "" {
				return name
			}
		}
		if n < depth {
			break
		}
	}
	return "store"
}

// frameName is the span name of the exported Store method pc is in, or
// "" when pc is in any other function.
func (t *tracedConn) frameName(pc uintptr) string {
	if v, ok := t.names.Load(pc); ok {
		return v.(string)
	}
	name := ""
	frames := runtime.CallersFrames([]uintptr{pc})
	for {
		f, more := frames.Next()
		if m, ok := strings.CutPrefix(f.Function, storeMethodPrefix); ok && isExported(m) {
			name = "store." + m
			break
		}
		if !more {
			break
		}
	}
	t.names.Store(pc, name)
	return name
}

// isExported reports whether m is an exported method's name (not a
// closure inside one, "AppendEvents.func1").
func isExported(m string) bool {
	return m != "" && m[0] >= 'A' && m[0] <= 'Z' && !strings.Contains(m, ".")
}

func isNoRows(err error) bool { return errors.Is(err, sql.ErrNoRows) }
