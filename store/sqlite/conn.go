package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
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

func (p *pool) Query(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	var (
		r   *sql.Rows
		err error
	)
	if st := p.stmt(ctx, query); st != nil {
		r, err = st.QueryContext(ctx, bind(args)...)
	} else {
		r, err = p.db.QueryContext(ctx, query, bind(args)...)
	}
	if err != nil {
		return nil, err
	}
	return rows{r}, nil
}

func (p *pool) QueryRow(ctx context.Context, query string, args ...any) sqlstore.Row {
	if st := p.stmt(ctx, query); st != nil {
		return row{st.QueryRowContext(ctx, bind(args)...)}
	}
	return row{p.db.QueryRowContext(ctx, query, bind(args)...)}
}

func (p *pool) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	var (
		res sql.Result
		err error
	)
	if st := p.stmt(ctx, query); st != nil {
		res, err = st.ExecContext(ctx, bind(args)...)
	} else {
		res, err = p.db.ExecContext(ctx, query, bind(args)...)
	}
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// Batch runs b in one read transaction, so its statements see one
// snapshot. (Batches that write run in Conn.Tx.)
func (p *pool) Batch(ctx context.Context, b *sqlstore.Batch) error {
	tx, err := p.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	return sqlstore.RunBatch(ctx, &txQuerier{tx: tx, p: p}, b)
}

// txQuerier runs statements in a transaction, through the statements
// prepared on its pool. One not yet prepared runs unprepared and is noted
// in missed: preparing it on the pool now would wait for the connection
// the transaction holds (the writer pool has one).
type txQuerier struct {
	tx     *sql.Tx
	p      *pool
	missed []string
}

func (q *txQuerier) stmt(ctx context.Context, query string) *sql.Stmt {
	if st, ok := q.p.stmts.Load(query); ok {
		return q.tx.StmtContext(ctx, st.(*sql.Stmt))
	}
	q.missed = append(q.missed, query)
	return nil
}

func (q *txQuerier) Query(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	var (
		r   *sql.Rows
		err error
	)
	if st := q.stmt(ctx, query); st != nil {
		r, err = st.QueryContext(ctx, bind(args)...)
	} else {
		r, err = q.tx.QueryContext(ctx, query, bind(args)...)
	}
	if err != nil {
		return nil, err
	}
	return rows{r}, nil
}

func (q *txQuerier) QueryRow(ctx context.Context, query string, args ...any) sqlstore.Row {
	if st := q.stmt(ctx, query); st != nil {
		return row{st.QueryRowContext(ctx, bind(args)...)}
	}
	return row{q.tx.QueryRowContext(ctx, query, bind(args)...)}
}

func (q *txQuerier) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	var (
		res sql.Result
		err error
	)
	if st := q.stmt(ctx, query); st != nil {
		res, err = st.ExecContext(ctx, bind(args)...)
	} else {
		res, err = q.tx.ExecContext(ctx, query, bind(args)...)
	}
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (q *txQuerier) Batch(ctx context.Context, b *sqlstore.Batch) error {
	return sqlstore.RunBatch(ctx, q, b)
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
			dest[i] = listDest{p}
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

type listDest struct{ p *[]string }

func (d listDest) Scan(v any) error {
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
