package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// WithLock runs fn while holding the named lock, across every process
// sharing the database (it implements latchkey.Locker). The lock is a row
// lock on store_locks(name), held by a transaction that stays open while
// fn runs on other pooled connections, so it works wherever SELECT ... FOR
// UPDATE does (CockroachDB included) and is released if this process
// dies. The pool therefore needs at least two connections; fn must not
// take the same lock again. fn's own writes are not part of the lock's
// transaction: they commit as fn makes them.
func (s *Store) WithLock(ctx context.Context, name string, fn func(ctx context.Context) error) error {
	if _, err := s.pool.Exec(ctx, `INSERT INTO store_locks (name) VALUES ($1) ON CONFLICT (name) DO NOTHING`, name); err != nil {
		return mapErr(err)
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return mapErr(err)
	}
	// Rolled back, not committed: the transaction wrote nothing.
	defer tx.Rollback(context.WithoutCancel(ctx))
	var got string
	if err := tx.QueryRow(ctx, `SELECT name FROM store_locks WHERE name = $1 FOR UPDATE`, name).Scan(&got); err != nil {
		return mapErr(err)
	}
	return fn(ctx)
}

// Notify signals every Listen on channel, in every process, through
// PostgreSQL's NOTIFY (it implements latchkey.Notifier). Signals carry no
// payload and coalesce.
func (s *Store) Notify(ctx context.Context, channel string) error {
	_, err := s.pool.Exec(ctx, `SELECT pg_notify($1, '')`, channel)
	return mapErr(err)
}

// listenRetry is how long Listen waits before reconnecting after its
// connection failed.
const listenRetry = time.Second

// Listen returns a channel that receives a value when channel is notified
// (see Notify), and once after every (re)connection, since notifications
// sent while no connection listened are lost. It holds one connection of
// its own, outside the pool, and reconnects after failures until ctx ends;
// the returned channel is then closed. Deliveries coalesce: the channel
// has a buffer of one and never blocks the listener.
//
// LISTEN/NOTIFY is PostgreSQL-only; on databases without it (CockroachDB)
// Listen keeps failing quietly and callers rely on their polling.
func (s *Store) Listen(ctx context.Context, channel string) <-chan struct{} {
	out := make(chan struct{}, 1)
	signal := func() {
		select {
		case out <- struct{}{}:
		default:
		}
	}
	cfg := s.pool.Config().ConnConfig.Copy()
	go func() {
		defer close(out)
		for ctx.Err() == nil {
			s.listenOnce(ctx, cfg, channel, signal)
			select {
			case <-ctx.Done():
			case <-time.After(listenRetry):
			}
		}
	}()
	return out
}

func (s *Store) listenOnce(ctx context.Context, cfg *pgx.ConnConfig, channel string, signal func()) {
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		conn.Close(cctx)
	}()
	if _, err := conn.Exec(ctx, `LISTEN `+pgx.Identifier{channel}.Sanitize()); err != nil {
		return
	}
	signal()
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return
		}
		signal()
	}
}
