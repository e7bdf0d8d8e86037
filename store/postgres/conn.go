package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/latchkey/latchkey/store/sqlstore"
)

// conn is sqlstore.Conn on a pgx pool. pgx binds and scans the Go types
// sqlstore uses as they are (timestamptz for times, arrays for lists).
type conn struct {
	pool *pgxpool.Pool
}

func (c *conn) Read() sqlstore.Querier  { return poolQuerier{c.pool} }
func (c *conn) Write() sqlstore.Querier { return poolQuerier{c.pool} }

// Close waits for queries in flight and closes every connection. It
// leaves the schema and its data in place.
func (c *conn) Close() error {
	c.pool.Close()
	return nil
}

func (c *conn) MapErr(err error) error { return mapErr(err) }

// Tx runs fn in a READ COMMITTED transaction (see tx).
func (c *conn) Tx(ctx context.Context, fn func(sqlstore.Querier) error) error {
	return c.tx(ctx, func(tx pgx.Tx) error { return fn(txQuerier{tx}) })
}

func (c *conn) Applied(ctx context.Context) ([]int, error) {
	rows, err := c.pool.Query(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int])
}

// pgxQuerier is what a pool and a transaction share.
type pgxQuerier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

func query(ctx context.Context, q pgxQuerier, sql string, args []any) (sqlstore.Rows, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return rows, nil
}

func exec(ctx context.Context, q pgxQuerier, sql string, args []any) (int64, error) {
	tag, err := q.Exec(ctx, sql, args...)
	return tag.RowsAffected(), err
}

type poolQuerier struct{ p *pgxpool.Pool }

func (q poolQuerier) Query(ctx context.Context, sql string, args ...any) (sqlstore.Rows, error) {
	return query(ctx, q.p, sql, args)
}

func (q poolQuerier) QueryRow(ctx context.Context, sql string, args ...any) sqlstore.Row {
	return q.p.QueryRow(ctx, sql, args...)
}

func (q poolQuerier) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	return exec(ctx, q.p, sql, args)
}

// Batch runs b's reads in one REPEATABLE READ, read-only transaction (one
// snapshot), sent with its BEGIN and COMMIT in one round trip.
func (q poolQuerier) Batch(ctx context.Context, b *sqlstore.Batch) error {
	conn, err := q.p.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	return sendBatch(ctx, conn.Conn(), `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`, b, `COMMIT`)
}

type txQuerier struct{ tx pgx.Tx }

func (q txQuerier) Query(ctx context.Context, sql string, args ...any) (sqlstore.Rows, error) {
	return query(ctx, q.tx, sql, args)
}

func (q txQuerier) QueryRow(ctx context.Context, sql string, args ...any) sqlstore.Row {
	return q.tx.QueryRow(ctx, sql, args...)
}

func (q txQuerier) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	return exec(ctx, q.tx, sql, args)
}

func (q txQuerier) Batch(ctx context.Context, b *sqlstore.Batch) error {
	return q.tx.SendBatch(ctx, queue(&pgx.Batch{}, b)).Close()
}

// queue adds b's statements to pb, each handing its result to b's
// function.
func queue(pb *pgx.Batch, b *sqlstore.Batch) *pgx.Batch {
	for _, it := range b.Items {
		qq := pb.Queue(it.Query, it.Args...)
		switch {
		case it.Row != nil:
			fn := it.Row
			qq.QueryRow(func(row pgx.Row) error { return fn(row) })
		case it.Rows != nil:
			fn := it.Rows
			qq.Query(func(rows pgx.Rows) error { return fn(rows) })
		case it.Exec != nil:
			fn := it.Exec
			qq.Exec(func(tag pgconn.CommandTag) error { return fn(tag.RowsAffected()) })
		}
	}
	return pb
}

// sendBatch sends b on conn in one round trip, after begin and before end
// when they are set. A batch is one pipeline with one Sync, so a failing
// statement skips the rest, end included; a transaction left open is then
// rolled back, so the connection goes back to the pool clean.
func sendBatch(ctx context.Context, conn *pgx.Conn, begin string, b *sqlstore.Batch, end string) error {
	pb := &pgx.Batch{}
	if begin != "" {
		pb.Queue(begin)
	}
	queue(pb, b)
	if end != "" {
		pb.Queue(end)
	}
	err := conn.SendBatch(ctx, pb).Close()
	if err != nil && conn.PgConn().TxStatus() != 'I' {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		conn.Exec(rctx, `ROLLBACK`)
	}
	return err
}
