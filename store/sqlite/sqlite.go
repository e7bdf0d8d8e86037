// Package sqlite is the default Store: embedded SQLite through
// modernc.org/sqlite (no cgo), in WAL mode, with embedded numbered
// migrations applied at Open. Every query lives in store/sqlstore; this
// package opens the database and adapts database/sql to sqlstore.Conn.
//
// One connection writes (SQLite allows one writer at a time; queuing in Go
// is cheaper than SQLITE_BUSY retries), so a write transaction's reads
// and writes are atomic without row locks; a small pool of query-only
// connections reads concurrently. Statements are prepared once per pool
// and cached by text (up to maxStmts per pool). Times are stored as
// INTEGER unix microseconds in UTC, 0 meaning "none"; lists as JSON text.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/filter"
	"github.com/latchkey/latchkey/internal/migrations"
	"github.com/latchkey/latchkey/store/sqlstore"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Store is a SQLite-backed store for every area.
type Store struct {
	*sqlstore.Store
	conn *conn
	want []migrations.Migration
}

// Options tune Open.
type Options struct {
	// Synchronous is SQLite's synchronous pragma; default FULL, so that a
	// committed transaction survives power loss, not only a process crash.
	Synchronous string
	// Migrate applies pending migrations at Open; nil means true. With
	// false, Ready fails until Migrate has run (latchkey serve
	// --migrate=false and latchkey migrate up).
	Migrate *bool
}

// Dialect is SQLite's SQL where it differs from PostgreSQL's.
var Dialect = sqlstore.Dialect{
	Name:   "sqlite",
	Filter: filter.SQLite,
	In: func(expr string, n int) string {
		return expr + ` IN (SELECT value FROM json_each($` + strconv.Itoa(n) + `))`
	},
	Unindexed: func(col string) string { return "+" + col },
	// A UNION ALL of one walk per type: SQLite has no LATERAL join.
	NotifySeqs: func(tenantID string, types []string, after, head int64, _ time.Time, limit int) (string, []any) {
		var b strings.Builder
		args := make([]any, 0, 5*len(types)+1)
		b.WriteString(`SELECT seq FROM (`)
		for i, t := range types {
			if i > 0 {
				b.WriteString(` UNION ALL `)
			}
			n := len(args)
			fmt.Fprintf(&b, `SELECT * FROM (SELECT seq FROM events WHERE tenant_id = $%d AND type_id = $%d AND seq > $%d AND seq <= $%d ORDER BY seq LIMIT $%d)`,
				n+1, n+2, n+3, n+4, n+5)
			args = append(args, tenantID, t, after, head, limit)
		}
		args = append(args, limit)
		fmt.Fprintf(&b, `) ORDER BY seq LIMIT $%d`, len(args))
		return b.String(), args
	},
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
	want, err := migrations.Load("sqlite", migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	w, err := sql.Open("sqlite", dsn("_txlock", "immediate"))
	if err != nil {
		return nil, err
	}
	w.SetMaxOpenConns(1)
	w.SetConnMaxIdleTime(0)
	c := &conn{w: newPool(w)}
	c.wq = c.w.querier()
	if opts.Migrate == nil || *opts.Migrate {
		if err := c.migrate(ctx, want); err != nil {
			w.Close()
			return nil, err
		}
	}
	r, err := sql.Open("sqlite", dsn("_pragma", "query_only(1)"))
	if err != nil {
		w.Close()
		return nil, err
	}
	r.SetMaxOpenConns(max(4, runtime.GOMAXPROCS(0)))
	c.r = newPool(r)
	c.rq = c.r.querier()
	return &Store{Store: sqlstore.New(c, Dialect, want), conn: c, want: want}, nil
}

// Migrate applies the pending migrations (latchkey migrate up).
func (s *Store) Migrate(ctx context.Context) error { return s.conn.migrate(ctx, s.want) }

func (c *conn) migrate(ctx context.Context, ms []migrations.Migration) error {
	if _, err := c.w.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("sqlite: migrations table: %w", err)
	}
	for _, m := range ms {
		if err := c.apply(ctx, m); err != nil {
			return err
		}
	}
	return nil
}

// apply runs one migration unless it is applied, in its own transaction;
// its file may hold several statements, so it is run unprepared.
func (c *conn) apply(ctx context.Context, m migrations.Migration) error {
	tx, err := c.w.db.BeginTx(ctx, nil)
	if err != nil {
		return mapErr(err)
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = $1`, m.Version).Scan(&n); err != nil || n > 0 {
		return mapErr(err)
	}
	if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
		return fmt.Errorf("sqlite: migration %s: %w", m.Name, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)`, m.Version, time.Now().UnixMicro()); err != nil {
		return mapErr(err)
	}
	return mapErr(tx.Commit())
}

// conn is sqlstore.Conn on the writer and the readers.
type conn struct {
	w, r   *pool
	wq, rq *querier
}

func (c *conn) Read() sqlstore.Querier  { return c.rq }
func (c *conn) Write() sqlstore.Querier { return c.wq }

func (c *conn) Close() error {
	return errors.Join(c.r.close(), c.w.close())
}

func (c *conn) MapErr(err error) error { return mapErr(err) }

// Tx runs fn in a write transaction (BEGIN IMMEDIATE on the one writer
// connection). Statements of fn not yet prepared on the writer are
// prepared after the commit, when the connection is free again, so the
// next transaction finds them.
func (c *conn) Tx(ctx context.Context, fn func(sqlstore.Querier) error) error {
	tx, err := c.w.db.BeginTx(ctx, nil)
	if err != nil {
		return mapErr(err)
	}
	q, missed := c.w.inTx(tx)
	if err := fn(q); err != nil {
		tx.Rollback()
		return mapErr(err)
	}
	if err := tx.Commit(); err != nil {
		return mapErr(err)
	}
	for _, query := range *missed {
		c.w.stmt(ctx, query)
	}
	return nil
}

func (c *conn) Pipeline(ctx context.Context, first, second func(*sqlstore.Batch)) error {
	return c.Tx(ctx, func(q sqlstore.Querier) error {
		for _, fill := range []func(*sqlstore.Batch){first, second} {
			b := &sqlstore.Batch{}
			fill(b)
			if err := sqlstore.RunBatch(ctx, q, b); err != nil {
				return err
			}
		}
		return nil
	})
}

// mapErr turns driver errors into fault kinds by SQLite result code.
func mapErr(err error) error {
	return sqlstore.MapErr(err, func(err error) error {
		var se *sqlite.Error
		if !errors.As(err, &se) {
			return nil
		}
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return fault.E(fault.Conflict, "already exists", err)
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return fault.E(fault.Unavailable, "database busy; try again", err)
		}
		return nil
	})
}
