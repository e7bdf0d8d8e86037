package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/latchkey/latchkey/store/sqlstore"
)

// maxStmts bounds the statements prepared and kept per pool. Most query
// texts are fixed, but some are shaped by callers (filtered event queries:
// the text depends on the filter's structure, its values are bound), so
// callers must not grow the cache without bound; past it, statements are
// prepared for each use. Each costs a few kilobytes per connection.
const maxStmts = 512

// pool is a database/sql pool with its prepared statements: preparing
// costs as much as running a point query, so statements are prepared once
// per pool and kept by query text.
type pool struct {
	db    *sql.DB
	stmts sync.Map // string -> *sql.Stmt
	n     atomic.Int64
}

func newPool(db *sql.DB) *pool { return &pool{db: db} }

// stmt returns the statement of query, preparing it while the cache has
// room; nil when it is full or preparing failed (the caller then runs the
// query unprepared, which reports any error). Racing first uses of one
// text may count it twice, which only makes the bound stricter.
func (p *pool) stmt(ctx context.Context, query string) *sql.Stmt {
	if st, ok := p.stmts.Load(query); ok {
		return st.(*sql.Stmt)
	}
	if p.n.Add(1) > maxStmts {
		p.n.Add(-1)
		return nil
	}
	st, err := p.db.PrepareContext(ctx, query)
	if err != nil {
		p.n.Add(-1)
		return nil
	}
	if prev, loaded := p.stmts.LoadOrStore(query, st); loaded {
		st.Close()
		p.n.Add(-1)
		return prev.(*sql.Stmt)
	}
	return st
}

func (p *pool) close() error {
	p.stmts.Range(func(_, v any) bool { v.(*sql.Stmt).Close(); return true })
	return p.db.Close()
}

// runner is what a pool and a transaction share.
type runner interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// querier is sqlstore.Querier on a pool or in a transaction: a statement
// runs prepared when stmt has it, else unprepared on run.
type querier struct {
	run  runner
	stmt func(ctx context.Context, query string) *sql.Stmt
	// batch runs a sqlstore.Batch; nil runs it in order on this querier.
	batch func(ctx context.Context, b *sqlstore.Batch) error
}

func (p *pool) querier() *querier {
	return &querier{run: p.db, stmt: p.stmt, batch: p.readBatch}
}

// on returns where query runs: its prepared statement, or run.
func (q *querier) on(ctx context.Context, query string) runner {
	if st := q.stmt(ctx, query); st != nil {
		return stmtRunner{st}
	}
	return q.run
}

func (q *querier) Query(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	r, err := q.on(ctx, query).QueryContext(ctx, query, bind(args)...)
	if err != nil {
		return nil, err
	}
	return rows{r}, nil
}

func (q *querier) QueryRow(ctx context.Context, query string, args ...any) sqlstore.Row {
	return row{q.on(ctx, query).QueryRowContext(ctx, query, bind(args)...)}
}

func (q *querier) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := q.on(ctx, query).ExecContext(ctx, query, bind(args)...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// stmtRunner runs its statement, whatever the query text says.
type stmtRunner struct{ st *sql.Stmt }

func (r stmtRunner) QueryContext(ctx context.Context, _ string, args ...any) (*sql.Rows, error) {
	return r.st.QueryContext(ctx, args...)
}

func (r stmtRunner) QueryRowContext(ctx context.Context, _ string, args ...any) *sql.Row {
	return r.st.QueryRowContext(ctx, args...)
}

func (r stmtRunner) ExecContext(ctx context.Context, _ string, args ...any) (sql.Result, error) {
	return r.st.ExecContext(ctx, args...)
}

func (q *querier) Batch(ctx context.Context, b *sqlstore.Batch) error {
	if q.batch != nil {
		return q.batch(ctx, b)
	}
	return sqlstore.RunBatch(ctx, q, b)
}

// readBatch runs b in one read transaction, so its statements see one
// snapshot. (Batches that write run in Conn.Tx.)
func (p *pool) readBatch(ctx context.Context, b *sqlstore.Batch) error {
	tx, err := p.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	q, _ := p.inTx(tx)
	return sqlstore.RunBatch(ctx, q, b)
}

// inTx returns a querier in tx and the queries it ran that p has not
// prepared. They run unprepared: preparing them on the pool now would
// wait for the connection tx holds (the writer pool has one). Conn.Tx
// prepares them after the commit. A statement bound to tx is kept for the
// rest of it: an append runs the same insert for every row.
func (p *pool) inTx(tx *sql.Tx) (*querier, *[]string) {
	var (
		missed []string
		bound  []txStmt // few distinct statements per transaction
	)
	return &querier{run: tx, stmt: func(ctx context.Context, query string) *sql.Stmt {
		for _, b := range bound {
			if b.query == query {
				return b.st
			}
		}
		if st, ok := p.stmts.Load(query); ok {
			b := txStmt{query, tx.StmtContext(ctx, st.(*sql.Stmt))}
			bound = append(bound, b)
			return b.st
		}
		if !slices.Contains(missed, query) {
			missed = append(missed, query)
		}
		return nil
	}}, &missed
}

type txStmt struct {
	query string
	st    *sql.Stmt
}

type rows struct{ *sql.Rows }

func (r rows) Close()                 { r.Rows.Close() }
func (r rows) Scan(dest ...any) error { return r.Rows.Scan(scanTo(dest)...) }

type row struct{ *sql.Row }

func (r row) Scan(dest ...any) error { return r.Row.Scan(scanTo(dest)...) }

// bind converts the Go types of sqlstore.Conn to SQLite's columns, in
// place: a time to unix microseconds (the zero time and a nil *time.Time
// to 0, "none"), a list to JSON text. Converted values pass through
// unchanged, so binding the same arguments twice is harmless.
func bind(args []any) []any {
	for i, a := range args {
		switch v := a.(type) {
		case time.Time:
			args[i] = micros(v)
		case *time.Time:
			if v == nil {
				args[i] = int64(0)
			} else {
				args[i] = micros(*v)
			}
		case []string:
			args[i] = jsonList(v)
		case []int64:
			args[i] = jsonList(v)
		}
	}
	return args
}

func micros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

func jsonList[T any](v []T) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // strings and integers always encode
	}
	return string(b)
}

// scanTo swaps, in place, the destinations that need a conversion from
// SQLite's columns for one that does it (see bind).
func scanTo(dest []any) []any {
	for i, d := range dest {
		switch p := d.(type) {
		case *time.Time:
			dest[i] = timeDest{p}
		case **time.Time:
			dest[i] = optTimeDest{p}
		case *[]string:
			dest[i] = listDest[string]{p}
		case *[]int64:
			dest[i] = listDest[int64]{p}
		}
	}
	return dest
}

type timeDest struct{ p *time.Time }

func (d timeDest) Scan(v any) error {
	n, ok := v.(int64)
	switch {
	case v == nil || ok && n == 0:
		*d.p = time.Time{}
	case ok:
		*d.p = time.UnixMicro(n).UTC()
	default:
		return fmt.Errorf("sqlite: time column holds %T", v)
	}
	return nil
}

type optTimeDest struct{ p **time.Time }

func (d optTimeDest) Scan(v any) error {
	var t time.Time
	if err := (timeDest{&t}).Scan(v); err != nil {
		return err
	}
	*d.p = nil
	if !t.IsZero() {
		*d.p = &t
	}
	return nil
}

type listDest[T string | int64] struct{ p *[]T }

func (d listDest[T]) Scan(v any) error {
	*d.p = nil
	switch x := v.(type) {
	case nil:
		return nil
	case string:
		return json.Unmarshal([]byte(x), d.p)
	case []byte:
		return json.Unmarshal(x, d.p)
	}
	return fmt.Errorf("sqlite: list column holds %T", v)
}
