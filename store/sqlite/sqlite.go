// Package sqlite is the default Store: embedded SQLite through
// modernc.org/sqlite (no cgo), in WAL mode, with embedded numbered
// migrations applied at Open. One connection writes (SQLite allows one
// writer at a time; queuing in Go is cheaper than SQLITE_BUSY retries) and
// a small pool reads concurrently.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"net/url"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/internal/migrations"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Store is a SQLite-backed store for every area.
type Store struct {
	w *sql.DB // the single writer
	r *sql.DB // readers

	// Prepared statements by query text: preparing costs as much as running
	// a point query, so hot queries are prepared once per pool.
	rstmts, wstmts sync.Map // string -> *sql.Stmt

	// Read statements whose text is shaped by callers (filtered event
	// queries: the text depends on the filter's structure, its values are
	// bound), cached up to maxShapedStmts so that callers cannot grow the
	// cache without bound; past that they are prepared for each use.
	shaped  sync.Map // string -> *sql.Stmt
	nshaped atomic.Int64
}

// maxShapedStmts bounds the cache of caller-shaped statements. Each one
// costs a few kilobytes per reader connection.
const maxShapedStmts = 256

// Options tune Open.
type Options struct {
	// Synchronous is SQLite's synchronous pragma; default FULL, so that a
	// committed transaction survives power loss, not only a process crash.
	Synchronous string
}

// Open opens (creating if needed) the database file at path and migrates it.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	if opts.Synchronous == "" {
		opts.Synchronous = "FULL"
	}
	dsn := func(extra ...string) string {
		q := url.Values{}
		for _, p := range []string{"journal_mode(WAL)", "busy_timeout(10000)", "foreign_keys(1)", "synchronous(" + opts.Synchronous + ")"} {
			q.Add("_pragma", p)
		}
		for i := 0; i+1 < len(extra); i += 2 {
			q.Add(extra[i], extra[i+1])
		}
		return "file:" + path + "?" + q.Encode()
	}
	w, err := sql.Open("sqlite", dsn("_txlock", "immediate"))
	if err != nil {
		return nil, err
	}
	w.SetMaxOpenConns(1)
	w.SetConnMaxIdleTime(0)
	s := &Store{w: w}
	if err := s.migrate(ctx); err != nil {
		w.Close()
		return nil, err
	}
	if err := s.warm(ctx, warmQueries...); err != nil {
		w.Close()
		return nil, err
	}
	r, err := sql.Open("sqlite", dsn("_pragma", "query_only(1)"))
	if err != nil {
		w.Close()
		return nil, err
	}
	r.SetMaxOpenConns(max(4, runtime.GOMAXPROCS(0)))
	s.r = r
	return s, nil
}

// Close closes the database.
func (s *Store) Close() error {
	for _, m := range []*sync.Map{&s.rstmts, &s.wstmts, &s.shaped} {
		m.Range(func(_, v any) bool { v.(*sql.Stmt).Close(); return true })
	}
	return errors.Join(s.r.Close(), s.w.Close())
}

func prepared(ctx context.Context, db *sql.DB, cache *sync.Map, query string) (*sql.Stmt, error) {
	if st, ok := cache.Load(query); ok {
		return st.(*sql.Stmt), nil
	}
	st, err := db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if prev, loaded := cache.LoadOrStore(query, st); loaded {
		st.Close()
		return prev.(*sql.Stmt), nil
	}
	return st, nil
}

// queryRow runs a read query through the statement cache.
func (s *Store) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := prepared(ctx, s.r, &s.rstmts, query)
	if err != nil {
		return s.r.QueryRowContext(ctx, query, args...) // reports the error through Scan
	}
	return st.QueryRowContext(ctx, args...)
}

// query runs a read query through the statement cache.
func (s *Store) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := prepared(ctx, s.r, &s.rstmts, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// shapedStmt returns the cached statement of a read query whose text
// callers shape (see Store.shaped), preparing it while the cache has room,
// or nil when it is full or preparing failed (the caller then runs the
// query unprepared, which reports any error). Racing first uses of one
// text may count it twice, which only makes the bound stricter.
func (s *Store) shapedStmt(ctx context.Context, query string) *sql.Stmt {
	if st, ok := s.shaped.Load(query); ok {
		return st.(*sql.Stmt)
	}
	if s.nshaped.Add(1) > maxShapedStmts {
		s.nshaped.Add(-1)
		return nil
	}
	st, err := prepared(ctx, s.r, &s.shaped, query)
	if err != nil {
		s.nshaped.Add(-1)
		return nil
	}
	return st
}

// queryShaped runs a caller-shaped read query, prepared once while the
// cache has room.
func (s *Store) queryShaped(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := s.shapedStmt(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return s.r.QueryContext(ctx, query, args...)
}

// queryRowShaped is queryShaped for one row.
func (s *Store) queryRowShaped(ctx context.Context, query string, args ...any) *sql.Row {
	if st := s.shapedStmt(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return s.r.QueryRowContext(ctx, query, args...)
}

// exec runs a write statement outside a transaction through the cache.
func (s *Store) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := prepared(ctx, s.w, &s.wstmts, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

// txStmt returns the write statement for query bound to tx. Only statements
// warmed at Open are cached: preparing on the pool inside a transaction
// would wait for the pool's one connection, which the transaction holds.
func (s *Store) txStmt(ctx context.Context, tx *sql.Tx, query string) (*sql.Stmt, error) {
	if st, ok := s.wstmts.Load(query); ok {
		return tx.StmtContext(ctx, st.(*sql.Stmt)), nil
	}
	return tx.PrepareContext(ctx, query)
}

// warm prepares the hot transactional statements on the writer.
func (s *Store) warm(ctx context.Context, queries ...string) error {
	for _, q := range queries {
		if _, err := prepared(ctx, s.w, &s.wstmts, q); err != nil {
			return fmt.Errorf("sqlite: prepare %q: %w", q, err)
		}
	}
	return nil
}

func (s *Store) migrate(ctx context.Context) error {
	if _, err := s.w.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("sqlite: migrations table: %w", err)
	}
	ms, err := migrations.Load("sqlite", migrationFiles, "migrations")
	if err != nil {
		return err
	}
	for _, m := range ms {
		v, base, body := m.Version, m.Name, m.SQL
		err = s.tx(ctx, func(tx *sql.Tx) error {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = ?`, v).Scan(&n); err != nil || n > 0 {
				return err
			}
			if _, err := tx.ExecContext(ctx, body); err != nil {
				return fmt.Errorf("sqlite: migration %s: %w", base, err)
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`, v, time.Now().UnixMicro())
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// tx runs fn in a write transaction (BEGIN IMMEDIATE), committing on nil.
func (s *Store) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return mapErr(err)
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return mapErr(err)
	}
	return mapErr(tx.Commit())
}

// mapErr turns driver errors into fault kinds by SQLite result code.
func mapErr(err error) error {
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
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return fault.E(fault.Conflict, "already exists", err)
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return fault.E(fault.Unavailable, "database busy; try again", err)
		}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fault.E(fault.Unavailable, "request cancelled", err)
	}
	return fault.E(fault.Internal, err)
}

func micros(t time.Time) int64 { return t.UnixMicro() }

func fromMicros(v int64) time.Time { return time.UnixMicro(v).UTC() }

func notFound(err error, what string) error {
	if errors.Is(err, sql.ErrNoRows) {
		return fault.E(fault.NotFound, what+" not found")
	}
	return mapErr(err)
}
