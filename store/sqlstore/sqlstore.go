package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/filter"
	"github.com/latchkey/latchkey/internal/migrations"
)

// Rows is a result set being read. pgx.Rows satisfies it as it is.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// Row is the first row of a result. Scan reports an error matching
// sql.ErrNoRows (errors.Is) when there is none.
type Row interface {
	Scan(dest ...any) error
}

// Querier runs statements: on a pool, or inside a transaction. Statements
// use $1, $2, ... placeholders, which both databases read.
type Querier interface {
	Query(ctx context.Context, query string, args ...any) (Rows, error)
	QueryRow(ctx context.Context, query string, args ...any) Row
	// Exec returns the number of rows the statement changed.
	Exec(ctx context.Context, query string, args ...any) (int64, error)
	// Batch runs b's statements in order and hands each its result; the
	// database may send them together (PostgreSQL does, in one round
	// trip). Outside a transaction a batch of reads sees one snapshot
	// where the database gives one cheaply.
	Batch(ctx context.Context, b *Batch) error
}

// Conn is a database as the store uses it: what a driver package
// (store/sqlite, store/postgres) hands to New.
//
// Values are bound and scanned as Go types: time.Time, *time.Time (nil is
// "none"), []string and []int64 lists, []byte, string, integers, bool. A
// Conn whose database has no such column type converts them (SQLite keeps
// times as integer microseconds, with 0 for "none", and lists as JSON
// text); scanning a time yields UTC.
type Conn interface {
	// Read runs reads outside a transaction.
	Read() Querier
	// Write runs single statements that write, outside a transaction.
	Write() Querier
	// Tx runs fn in a write transaction, committing when it returns nil.
	// fn may be run again after a serialization failure, so it must
	// derive everything it writes from what it reads inside.
	Tx(ctx context.Context, fn func(Querier) error) error
	// Pipeline runs one write transaction as two batches: first (locks
	// and reads whose results the second needs), then second, built
	// after first's results were handed out. PostgreSQL sends BEGIN with
	// the first and COMMIT with the second: two round trips in all.
	Pipeline(ctx context.Context, first, second func(*Batch)) error
	// MapErr turns a driver error into a fault kind by error code; faults
	// pass through.
	MapErr(err error) error
	Close() error
}

// Dialect is the SQL text that differs between the databases.
type Dialect struct {
	// Name names the database in errors ("sqlite", "postgres").
	Name string
	// Filter is how event filters compile.
	Filter filter.Engine
	// In is the condition that expr is one of the list bound as
	// parameter $n (a []string or []int64).
	In func(expr string, n int) string
	// ForUpdate follows a SELECT whose rows the transaction changes next
	// (row locks; empty where writers are serialised anyway).
	ForUpdate string
	// SkipLocked follows a SELECT that picks rows for one claimer among
	// several (FOR UPDATE SKIP LOCKED; empty where writers are serialised).
	SkipLocked string
	// LockKey, when set, is a statement that takes a lock on the string
	// bound as $1 until the transaction ends (an advisory lock), where
	// writers are not serialised anyway.
	LockKey string
	// Unindexed wraps a column in a condition whose index the planner must
	// not prefer (SQLite's unary +).
	Unindexed func(col string) string
	// NotifySeqs returns the query (and its arguments) of the merge of
	// one index-only walk of events_by_type per type: the first limit
	// seqs in (after, head] of any of types, in order. A database with
	// PartitionedLogs also leaves out events received before notBefore
	// (which prunes the partitions), others may keep them.
	NotifySeqs func(tenantID string, types []string, after, head int64, notBefore time.Time, limit int) (string, []any)
	// PartitionedLogs says the logs are partitioned, their partitions
	// listed in log_partitions (PostgreSQL). The events and event_users
	// tables by received_at, which never decreases along a tenant's seqs
	// (on every database: event_heads keeps the received_at of each
	// tenant's last event and an append raises an earlier one to it), so
	// that a bound on one bounds the other; user rows carry their event's
	// received_at. audit_batches by last_time: an export's windows bound
	// last_time from above by the end of the partition they read, so that
	// each probes one partition, not every later one.
	PartitionedLogs bool
	// RecentEvents, when set, is a query of one value: the received_at
	// from which on a tenant's (bound as $1) newest events lie, chosen so
	// that the database reads little to find them (on a partitioned log,
	// the start of a recent partition), or NULL or no row when it cannot
	// tell. An events query tries the events received since then first
	// and reads the whole log only when they do not fill the page and the
	// count (see QueryEvents).
	RecentEvents string
	// InsertEvents and InsertEventUsers, when set, insert all the rows of
	// an append in one statement each, from arrays: the events' tenant_id,
	// seq, id, type_id, occurred_at, received_at, user_ids (each a JSON
	// array of strings), body (JSON text) and trace_parent; the user rows'
	// tenant_id, user_id, seq and received_at. Without them each row is
	// an INSERT of its own. The head lock is held while the rows are
	// inserted: one statement instead of hundreds is what lets appenders
	// of one tenant in several processes take turns quickly.
	InsertEvents, InsertEventUsers string
}

// Store is every area's store on one SQL database. It is safe for
// concurrent use.
type Store struct {
	c          Conn
	d          Dialect
	migrations []migrations.Migration
}

// New returns the store on c. want lists the migrations built into the
// binary, for Ready.
//
// The store's transactions, batches and statements are spans of the
// Store method that runs them when the caller's span is recording (see
// package internal/tracing): instrumented once here, for every database.
func New(c Conn, d Dialect, want []migrations.Migration) *Store {
	return &Store{c: newClaimConn(newTracedConn(c, d.Name)), d: d, migrations: want}
}

// Close closes the database.
func (s *Store) Close() error { return s.c.Close() }

// Ready reports whether the database answers and every migration built
// into this binary is applied (fault.Unavailable otherwise). It runs one
// small query, for a readiness probe.
func (s *Store) Ready(ctx context.Context) error {
	applied, err := list(ctx, s, s.c.Read(), func(row Row) (v int, err error) {
		err = row.Scan(&v)
		return v, err
	}, `SELECT version FROM schema_migrations`)
	if err != nil {
		return fault.E(fault.Unavailable, s.d.Name+": the database does not answer", err)
	}
	return migrations.CheckApplied(s.d.Name, s.migrations, applied)
}

// MigrationState is one migration built into the binary and whether the
// database has it (latchkey migrate status).
type MigrationState struct {
	Version int    `json:"version"`
	Name    string `json:"name"`
	Applied bool   `json:"applied"`
}

// MigrationStatus lists the migrations built into this binary and which
// of them the database has applied; a database never migrated has none.
func (s *Store) MigrationStatus(ctx context.Context) ([]MigrationState, error) {
	applied, err := list(ctx, s, s.c.Read(), func(row Row) (v int, err error) {
		err = row.Scan(&v)
		return v, err
	}, `SELECT version FROM schema_migrations`)
	if err != nil {
		// The table itself is made by the first migration run.
		if !strings.Contains(err.Error(), "schema_migrations") {
			return nil, err
		}
		applied = nil
	}
	out := make([]MigrationState, len(s.migrations))
	for i, m := range s.migrations {
		out[i] = MigrationState{Version: m.Version, Name: m.Name, Applied: slices.Contains(applied, m.Version)}
	}
	return out, nil
}

// Batch is statements sent together (see Querier.Batch); each may hand
// its result to a function, which runs before the next statement's.
type Batch struct {
	Items []BatchItem
	// Err, set by Fail, fails the batch before any statement of it runs,
	// and with it the transaction it belongs to.
	Err error
}

// Fail records that the statements cannot be built (a value that cannot
// be encoded): the batch then fails with err instead of running, so a
// transaction is never committed without them.
func (b *Batch) Fail(err error) {
	if b.Err == nil {
		b.Err = err
	}
}

// BatchItem is one statement of a Batch; at most one of Exec, Row and
// Rows is set.
type BatchItem struct {
	Query string
	Args  []any
	Exec  func(affected int64) error
	Row   func(Row) error
	Rows  func(Rows) error
}

// Exec queues a statement; fn, if not nil, gets the rows it changed.
func (b *Batch) Exec(fn func(affected int64) error, query string, args ...any) {
	b.Items = append(b.Items, BatchItem{Query: query, Args: args, Exec: fn})
}

// QueryRow queues a statement whose first row fn scans.
func (b *Batch) QueryRow(fn func(Row) error, query string, args ...any) {
	b.Items = append(b.Items, BatchItem{Query: query, Args: args, Row: fn})
}

// Query queues a statement whose rows fn reads; the rows are closed after.
func (b *Batch) Query(fn func(Rows) error, query string, args ...any) {
	b.Items = append(b.Items, BatchItem{Query: query, Args: args, Rows: fn})
}

// RunBatch runs b's statements one after another on q: Querier.Batch for
// a database that cannot send them together.
func RunBatch(ctx context.Context, q Querier, b *Batch) error {
	if b.Err != nil {
		return b.Err
	}
	for _, it := range b.Items {
		switch {
		case it.Row != nil:
			if err := it.Row(q.QueryRow(ctx, it.Query, it.Args...)); err != nil {
				return err
			}
		case it.Rows != nil:
			rows, err := q.Query(ctx, it.Query, it.Args...)
			if err != nil {
				return err
			}
			err = it.Rows(rows)
			rows.Close()
			if err != nil {
				return err
			}
		default:
			n, err := q.Exec(ctx, it.Query, it.Args...)
			if err != nil {
				return err
			}
			if it.Exec != nil {
				if err := it.Exec(n); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// appendRows appends every row of rows, read with scan, to dst; rows is
// closed after.
func appendRows[T any](dst []T, rows Rows, scan func(Row) (T, error)) ([]T, error) {
	defer rows.Close()
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		dst = append(dst, v)
	}
	return dst, rows.Err()
}

// list runs a query and collects its rows.
func list[T any](ctx context.Context, s *Store, q Querier, scan func(Row) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, s.c.MapErr(err)
	}
	out, err := appendRows(nil, rows, scan)
	return out, s.c.MapErr(err)
}

// MapErr turns a database error into a fault: faults pass through, "no
// rows" is NotFound, then code (a driver's mapping by error code, nil for
// errors it does not know), then a cancelled context is Unavailable and
// anything else Internal. Drivers implement Conn.MapErr with it.
func MapErr(err error, code func(error) error) error {
	if err == nil {
		return nil
	}
	var fe *fault.Error
	if errors.As(err, &fe) {
		return err
	}
	if errors.Is(err, sql.ErrNoRows) {
		return fault.E(fault.NotFound, "not found", err)
	}
	if f := code(err); f != nil {
		return f
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fault.E(fault.Unavailable, "request cancelled", err)
	}
	return fault.E(fault.Internal, err)
}

// countedPage reads a page of rows and the count of all of them in one
// snapshot (one batch on Read), so they agree under concurrent writes. The
// page is never nil.
func countedPage[T any](ctx context.Context, s *Store, scan func(Row) (T, error), count string, countArgs []any, query string, args ...any) ([]T, int, error) {
	var (
		total int
		out   []T
	)
	b := &Batch{}
	b.QueryRow(func(row Row) error { return row.Scan(&total) }, count, countArgs...)
	b.Query(func(rows Rows) error {
		var err error
		out, err = appendRows(nil, rows, scan)
		return err
	}, query, args...)
	if err := s.c.Read().Batch(ctx, b); err != nil {
		return nil, 0, s.c.MapErr(err)
	}
	out, _ = nonNil(out, nil)
	return out, total, nil
}

// nonNil is s, or an empty slice for nil, for lists that encode as [].
func nonNil[T any](s []T, err error) ([]T, error) {
	if s == nil && err == nil {
		s = []T{}
	}
	return s, err
}

// notFound maps "no rows" to a NotFound naming what was looked up.
func (s *Store) notFound(err error, what string) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return fault.E(fault.NotFound, what+" not found")
	}
	return s.c.MapErr(err)
}

// affected is the outcome of a write that must change a row: NotFound
// naming what when it changed none.
func (s *Store) affected(n int64, err error, what string) error {
	if err != nil {
		return s.c.MapErr(err)
	}
	if n == 0 {
		return fault.E(fault.NotFound, what+" not found")
	}
	return nil
}

// exec runs one write statement outside a transaction.
func (s *Store) exec(ctx context.Context, query string, args ...any) error {
	_, err := s.c.Write().Exec(ctx, query, args...)
	return s.c.MapErr(err)
}

// deleteWith deletes a row (NotFound naming what when there is none) and
// the rows that belong to it, in one transaction.
func (s *Store) deleteWith(ctx context.Context, what, del string, delArgs []any, children string, childArgs ...any) error {
	return s.c.Tx(ctx, func(q Querier) error {
		n, err := q.Exec(ctx, del, delArgs...)
		if err := s.affected(n, err, what); err != nil {
			return err
		}
		_, err = q.Exec(ctx, children, childArgs...)
		return err
	})
}

// jsonText encodes v for a JSON column. A Go nil slice becomes JSON null,
// as it always was, not SQL NULL.
func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only called with plain structs and string slices
	}
	return string(b)
}

func unmarshal(b []byte, v any) error {
	if err := json.Unmarshal(b, v); err != nil {
		return fault.E(fault.Internal, err)
	}
	return nil
}

// optTime is a time to store where the zero time means "none".
func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// orZero is the time a nullable column held, or the zero time.
func orZero(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}
