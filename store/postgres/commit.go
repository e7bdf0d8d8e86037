package postgres

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/idempotency"
	"github.com/latchkey/latchkey/store/sqlstore"
)

// A commit whose connection is lost (the server was restarted or the
// backend terminated while COMMIT was in flight, the network dropped)
// may or may not have committed: the client cannot tell from the error.
// Answering 503 then would tell a client that nothing was stored when
// its events or its created resource may well be; a client that retries
// would store them twice. So every write transaction (Tx, Pipeline) reads
// its transaction id (pg_current_xact_id) before COMMIT is sent, and a
// commit that fails that way is resolved by asking another connection
// for the transaction's status (pg_xact_status): committed is success,
// aborted the error it was; a database that cannot say (down, restarting,
// the transaction still in progress) is asked again for up to
// resolveFor, after which the answer is fault.Unavailable naming the
// outcome as unknown.

// resolveFor bounds how long a commit of unknown outcome is resolved: long
// enough for a database restart's recovery, short of a client's timeout.
const resolveFor = 10 * time.Second

// xactID is the statement that assigns the transaction its id and
// returns it (xid8 as bigint, which holds every id a cluster will use),
// with the time the server started: a restart in between makes a
// "committed" status ambiguous (see verdict).
const xactID = `SELECT pg_current_xact_id()::text::bigint, pg_postmaster_start_time()`

// xact is what a write transaction notes before COMMIT is sent.
type xact struct {
	id      int64
	started time.Time // pg_postmaster_start_time() when the transaction began
}

func (x *xact) scan(row sqlstore.Row) error { return row.Scan(&x.id, &x.started) }

// outcome is what a status read after a lost commit says.
type outcome int

const (
	verdictAsk       outcome = iota // not known yet: ask again
	verdictCommitted                // the transaction committed
	verdictAborted                  // it did not, and never will
	verdictUnknown                  // it cannot be learnt
)

// verdict reads pg_xact_status's answer for a transaction. After a crash
// restart of the server (restarted: its start time is not the one the
// transaction saw), "committed" cannot be trusted: an id whose WAL never
// reached the disk is given again to a new transaction after recovery, and
// its "committed" may be that one's (bench/chaos: a post answered 200
// whose events were lost with an immediate restart). "aborted" stays true
// (a durable commit keeps its id).
func verdict(status *string, restarted bool) outcome {
	switch {
	case status == nil:
		return verdictAsk
	case *status == "committed" && restarted:
		return verdictUnknown
	case *status == "committed":
		return verdictCommitted
	case *status == "aborted":
		return verdictAborted
	}
	return verdictAsk // in progress
}

// errUnknownOutcome is the fault when the outcome cannot be learnt.
var errUnknownOutcome = "postgres: the database connection was lost during the commit and the outcome could not be learnt in time; try again"

// outcomeUnknown reports whether err, from a batch or statement that
// carried COMMIT, leaves the commit's outcome unknown: the session ended
// (a FATAL or PANIC from the server, or no answer at all: a closed
// connection, a timeout, a cancelled context) rather than the server
// refusing a statement, which aborts the transaction for sure.
func outcomeUnknown(err error) bool {
	if err == nil {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Severity == "FATAL" || pe.Severity == "PANIC"
	}
	return true
}

// resolve returns the outcome of the commit of transaction xid that
// failed with err: nil when it committed, err when it was aborted or
// refused, fault.Unavailable when it was aborted by the lost connection
// or cannot be learnt within resolveFor.
func (c *conn) resolve(ctx context.Context, x xact, err error) error {
	if !outcomeUnknown(err) || x.id == 0 {
		return err
	}
	limit := c.resolveFor
	if limit == 0 {
		limit = resolveFor
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), limit)
	defer cancel()
	wait := 20 * time.Millisecond
	for {
		var (
			status  *string
			started time.Time
		)
		qerr := c.pool.QueryRow(ctx, `SELECT pg_xact_status($1::text::xid8), pg_postmaster_start_time()`, strconv.FormatInt(x.id, 10)).Scan(&status, &started)
		if qerr == nil {
			switch verdict(status, !started.Equal(x.started)) {
			case verdictCommitted:
				return nil
			case verdictAborted:
				return fault.E(fault.Unavailable, "postgres: the database connection was lost before the commit took place; nothing was stored; try again", err)
			case verdictUnknown:
				// A write that carries an Idempotency-Key marked its key
				// stored in the same transaction: the key's row tells.
				if ok, kerr := c.claimStored(ctx, idempotency.Pending(ctx)); kerr == nil {
					if ok {
						return nil
					}
					return fault.E(fault.Unavailable, "postgres: the database restarted before the commit took place; nothing was stored; try again", err)
				}
				return fault.E(fault.Unavailable, errUnknownOutcome, err)
			}
		}
		// "in progress", NULL (too old to tell), or no answer: again.
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fault.E(fault.Unavailable, errUnknownOutcome, err)
		case <-t.C:
		}
		wait = min(2*wait, time.Second)
	}
}

// errNoClaim is claimStored's answer for a write without a claim.
var errNoClaim = errors.New("postgres: the write carries no Idempotency-Key claim")

// claimStored reports whether the transaction that bound cs (see
// package idempotency and sqlstore's claimConn) committed: it marked the
// first claim's key stored under its token, which a transaction that did
// not commit leaves running.
func (c *conn) claimStored(ctx context.Context, cs []*idempotency.Claim) (bool, error) {
	if len(cs) == 0 {
		return false, errNoClaim
	}
	cl := cs[0]
	var state string
	err := c.pool.QueryRow(ctx, `SELECT state FROM idempotency_keys WHERE scope = $1 AND key = $2 AND token = $3`, cl.Scope, cl.Key, cl.Token).Scan(&state)
	if err != nil {
		return false, err // gone (no row) or unreachable: unknown
	}
	return state != string(idempotency.Running), nil
}

// tx runs fn in a READ COMMITTED transaction on one connection, committing
// when it returns nil. BEGIN and the read of the transaction id travel
// together (one round trip, as BEGIN alone); a commit of unknown outcome
// is resolved (see resolve). A serialization failure or deadlock rolls
// back and runs fn again (up to maxAttempts), so fn must compute
// everything it writes from what it reads inside the transaction.
func (c *conn) tx(ctx context.Context, fn func(pgxQuerier) error) error {
	return retry(ctx, c.healing(ctx, func() error { return c.txOnce(ctx, fn) }))
}

func (c *conn) txOnce(ctx context.Context, fn func(pgxQuerier) error) error {
	pc, err := c.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// A connection released inside a transaction is closed by the pool.
	defer pc.Release()
	conn := pc.Conn()
	var x xact
	b := &sqlstore.Batch{}
	b.QueryRow(x.scan, xactID)
	if err := sendBatch(ctx, conn, `BEGIN`, b, ""); err != nil {
		return err
	}
	if err := fn(conn); err != nil {
		rollback(ctx, conn)
		return err
	}
	if hook := c.commitHook.Load(); hook != nil {
		(*hook)(ctx, conn, x.id)
	}
	tag, err := conn.Exec(ctx, `COMMIT`)
	if err != nil {
		return c.resolve(ctx, x, err)
	}
	if tag.String() == "ROLLBACK" {
		// COMMIT of a transaction a failed statement aborted.
		return pgx.ErrTxCommitRollback
	}
	return nil
}

// rollback ends a transaction left open, with a context of its own, so a
// cancelled request still leaves the connection clean (or closed).
func rollback(ctx context.Context, conn *pgx.Conn) {
	if conn.PgConn().TxStatus() == 'I' {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	conn.Exec(rctx, `ROLLBACK`)
}
