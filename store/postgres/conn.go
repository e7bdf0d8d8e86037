package postgres

import (
	"context"
	"sync/atomic"
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
	// commitHook, set by tests only, runs just before a write
	// transaction's COMMIT is sent on conn, with the transaction's id.
	commitHook atomic.Pointer[func(ctx context.Context, conn *pgx.Conn, xid int64)]
	// resolveFor, when set (by tests), replaces the package's resolveFor.
	resolveFor time.Duration
	// makePartitions creates the log partitions up to the present (set by
	// Open): a write that finds no partition for its row runs it and is
	// tried once more (see healing).
	makePartitions func(ctx context.Context) error
}

func (c *conn) Read() sqlstore.Querier  { return querier{c.pool, c.pool} }
func (c *conn) Write() sqlstore.Querier { return querier{c.pool, c.pool} }

// Close waits for queries in flight and closes every connection. It
// leaves the schema and its data in place.
func (c *conn) Close() error {
	c.pool.Close()
	return nil
}

func (c *conn) MapErr(err error) error { return mapErr(err) }

// Tx runs fn in a READ COMMITTED transaction (see tx).
func (c *conn) Tx(ctx context.Context, fn func(sqlstore.Querier) error) error {
	return c.tx(ctx, func(tx pgxQuerier) error { return fn(querier{q: tx}) })
}

// pgxQuerier is what a pool and a transaction share.
type pgxQuerier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// querier is sqlstore.Querier on the pool (pool set) or in a transaction.
type querier struct {
	q    pgxQuerier
	pool *pgxpool.Pool
}

func (q querier) Query(ctx context.Context, sql string, args ...any) (sqlstore.Rows, error) {
	rows, err := q.q.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return rows, nil
}

func (q querier) QueryRow(ctx context.Context, sql string, args ...any) sqlstore.Row {
	return q.q.QueryRow(ctx, sql, args...)
}

func (q querier) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	tag, err := q.q.Exec(ctx, sql, args...)
	return tag.RowsAffected(), err
}

// Batch sends b in one round trip. On the pool, b's reads run in one
// REPEATABLE READ, read-only transaction (one snapshot) whose BEGIN and
// COMMIT travel with them.
func (q querier) Batch(ctx context.Context, b *sqlstore.Batch) error {
	if q.pool == nil {
		return q.q.SendBatch(ctx, queue(&pgx.Batch{}, b)).Close()
	}
	conn, err := q.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	return sendBatch(ctx, conn.Conn(), `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`, b, `COMMIT`)
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
	if b.Err != nil {
		return b.Err
	}
	pb := &pgx.Batch{}
	if begin != "" {
		pb.Queue(begin)
	}
	queue(pb, b)
	if end != "" {
		pb.Queue(end)
	}
	err := conn.SendBatch(ctx, pb).Close()
	if err != nil {
		rollback(ctx, conn)
	}
	return err
}
