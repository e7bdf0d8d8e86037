package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/idempotency"
)

var _ idempotency.Store = (*Store)(nil)

const idemCols = `scope, key, fingerprint, token, state, created_at, lease_until, expires_at, status, content_type, body`

func scanIdem(row Row) (idempotency.Entry, error) {
	var (
		e     idempotency.Entry
		state string
	)
	err := row.Scan(&e.Scope, &e.Key, &e.Fingerprint, &e.Token, &state, &e.CreatedAt, &e.LeaseUntil, &e.ExpiresAt, &e.Status, &e.ContentType, &e.Body)
	e.State = idempotency.State(state)
	return e, err
}

// ReserveIdempotencyKeys implements idempotency.Store in one
// Conn.Pipeline transaction: the first batch inserts each key unless it is
// held (ON CONFLICT DO NOTHING, which waits for a concurrent insert of the
// key to end) and reads, under its row lock, the entry holding it; the
// second replaces the holders that expired or whose running reservation
// lapsed (same fingerprint).
func (s *Store) ReserveIdempotencyKeys(ctx context.Context, es []idempotency.Entry, now time.Time) ([]idempotency.Entry, error) {
	out := make([]idempotency.Entry, len(es))
	inserted, missing := make([]bool, len(es)), make([]bool, len(es))
	// Rows are locked in key order, so that two batches never wait for
	// each other (a deadlock); a key given twice keeps its order.
	order := make([]int, len(es))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Or(strings.Compare(es[a].Scope, es[b].Scope), strings.Compare(es[a].Key, es[b].Key))
	})
	err := s.c.Pipeline(idempotency.Detach(ctx), func(b *Batch) {
		for _, i := range order {
			e := es[i]
			b.Exec(func(n int64) error {
				inserted[i] = n == 1
				return nil
			}, `INSERT INTO idempotency_keys (`+idemCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 0, '', $9) ON CONFLICT (scope, key) DO NOTHING`,
				e.Scope, e.Key, e.Fingerprint, e.Token, string(idempotency.Running), e.CreatedAt, e.LeaseUntil, e.ExpiresAt, []byte{})
			b.QueryRow(func(row Row) error {
				var err error
				out[i], err = scanIdem(row)
				if errors.Is(err, sql.ErrNoRows) {
					// Released by another transaction since the insert
					// found it: free again, reserved below.
					missing[i], err = true, nil
				}
				return err
			}, `SELECT `+idemCols+` FROM idempotency_keys WHERE scope = $1 AND key = $2`+s.d.ForUpdate, e.Scope, e.Key)
		}
	}, func(b *Batch) {
		decided := map[[2]string]idempotency.Entry{}
		for _, i := range order {
			e := es[i]
			k := [2]string{e.Scope, e.Key}
			if d, ok := decided[k]; ok {
				out[i] = d // the key's holder as an earlier entry of the batch left it
				continue
			}
			if missing[i] {
				b.Exec(nil, `INSERT INTO idempotency_keys (`+idemCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 0, '', $9) ON CONFLICT (scope, key) DO NOTHING`,
					e.Scope, e.Key, e.Fingerprint, e.Token, string(idempotency.Running), e.CreatedAt, e.LeaseUntil, e.ExpiresAt, []byte{})
				e.Body = []byte{}
				out[i], decided[k] = e, e
				continue
			}
			got := out[i]
			lapsed := got.State == idempotency.Running && !now.Before(got.LeaseUntil) && string(got.Fingerprint) == string(e.Fingerprint)
			if !inserted[i] && (!now.Before(got.ExpiresAt) || lapsed) {
				b.Exec(nil, `UPDATE idempotency_keys SET fingerprint = $3, token = $4, state = $5, created_at = $6, lease_until = $7,
					expires_at = $8, status = 0, content_type = '', body = $9 WHERE scope = $1 AND key = $2`,
					e.Scope, e.Key, e.Fingerprint, e.Token, string(idempotency.Running), e.CreatedAt, e.LeaseUntil, e.ExpiresAt, []byte{})
				got = e
				got.Body = []byte{}
			}
			out[i], decided[k] = got, got
		}
	})
	if err != nil {
		return nil, s.c.MapErr(err)
	}
	return out, nil
}

// FinishIdempotencyKeys implements idempotency.Store: one transaction of
// updates (answers) and deletes (releases), each under its token.
func (s *Store) FinishIdempotencyKeys(ctx context.Context, as []idempotency.Answer) error {
	if len(as) == 0 {
		return nil
	}
	return s.c.Pipeline(idempotency.Detach(ctx), func(*Batch) {}, func(b *Batch) {
		for _, a := range as {
			if a.Release {
				// Only while nothing is stored under it: a write whose
				// commit's outcome was not learnt may have bound it.
				b.Exec(nil, `DELETE FROM idempotency_keys WHERE scope = $1 AND key = $2 AND token = $3 AND state = $4`,
					a.Scope, a.Key, a.Token, string(idempotency.Running))
				continue
			}
			body := a.Body
			if body == nil {
				body = []byte{}
			}
			b.Exec(nil, `UPDATE idempotency_keys SET state = $4, status = $5, content_type = $6, body = $7
				WHERE scope = $1 AND key = $2 AND token = $3`, a.Scope, a.Key, a.Token, string(idempotency.Done), a.Status, a.ContentType, body)
		}
	})
}

// PurgeIdempotencyKeys implements idempotency.Store, through the
// expires_at index.
func (s *Store) PurgeIdempotencyKeys(ctx context.Context, now time.Time, limit int) (int, error) {
	n, err := s.c.Write().Exec(idempotency.Detach(ctx), `DELETE FROM idempotency_keys WHERE (scope, key) IN
		(SELECT scope, key FROM idempotency_keys WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2)`, now, limit)
	return int(n), s.c.MapErr(err)
}

// bindClaim marks a claim's key as stored under its reservation's token.
// It changes no row when the reservation lapsed and a retry took the key
// over (or the key was released); the write that carries it must then
// fail (errTakenOver).
const bindClaim = `UPDATE idempotency_keys SET state = $4 WHERE scope = $1 AND key = $2 AND token = $3 AND state = $5`

var errTakenOver = fault.E(fault.Conflict, "the Idempotency-Key's reservation lapsed and a retry took it over; this request stored nothing")

// claimConn binds the idempotency claims a write's context carries (see
// package idempotency) in that write's transaction: Tx runs the binding
// after fn, Pipeline in its first batch (whose results are read before
// COMMIT is sent, so a lost reservation rolls the write back, and whose
// row lock makes a concurrent takeover wait for the outcome), and a
// single statement on Write is run as a transaction with it. A claim is
// marked bound once the commit succeeded (or, on PostgreSQL, was found to
// have succeeded after the connection was lost). Reads, and rows read
// from Write (QueryRow, Query: single-use takes, lease claims), bind
// nothing; no creating write is made that way.
type claimConn struct {
	Conn
	write claimWriter
}

func newClaimConn(c Conn) *claimConn {
	cc := &claimConn{Conn: c}
	cc.write = claimWriter{Querier: c.Write(), c: cc}
	return cc
}

func (c *claimConn) Write() Querier { return c.write }

func (c *claimConn) Tx(ctx context.Context, fn func(Querier) error) error {
	cs := idempotency.Pending(ctx)
	if len(cs) == 0 {
		return c.Conn.Tx(ctx, fn)
	}
	err := c.Conn.Tx(ctx, func(q Querier) error {
		if err := fn(q); err != nil {
			return err
		}
		b := &Batch{}
		queueBinds(b, cs)
		queueAnswers(b, cs)
		return q.Batch(ctx, b)
	})
	return markBound(cs, err)
}

func (c *claimConn) Pipeline(ctx context.Context, first, second func(*Batch)) error {
	cs := idempotency.Pending(ctx)
	if len(cs) == 0 {
		return c.Conn.Pipeline(ctx, first, second)
	}
	err := c.Conn.Pipeline(ctx, func(b *Batch) {
		first(b)
		queueBinds(b, cs)
	}, func(b *Batch) {
		second(b)
		queueAnswers(b, cs)
	})
	return markBound(cs, err)
}

// keepAnswer stores a prepared answer in the write's transaction, after
// the binding (its row is locked and Stored by then).
const keepAnswer = `UPDATE idempotency_keys SET state = $4, status = $5, content_type = $6, body = $7
	WHERE scope = $1 AND key = $2 AND token = $3`

// queueAnswers queues the answers of the claims whose requests prepared
// them (idempotency.PrepareAnswer), so that the answer commits with the
// write: a retry after a crash between the commit and the answer gets it
// rather than 409. It runs after the write's statements are queued,
// when the values the store assigns in place (ids, seqs) are set.
func queueAnswers(b *Batch, cs []*idempotency.Claim) {
	for _, cl := range cs {
		a, ok := cl.PreparedAnswer()
		if !ok {
			continue
		}
		b.Exec(nil, keepAnswer, a.Scope, a.Key, a.Token, string(idempotency.Done), a.Status, a.ContentType, a.Body)
	}
}

func queueBinds(b *Batch, cs []*idempotency.Claim) {
	// In key order, as ReserveIdempotencyKeys locks them.
	cs = slices.Clone(cs)
	slices.SortFunc(cs, func(x, y *idempotency.Claim) int {
		return cmp.Or(strings.Compare(x.Scope, y.Scope), strings.Compare(x.Key, y.Key))
	})
	for _, cl := range cs {
		b.Exec(func(n int64) error {
			if n != 1 {
				return errTakenOver
			}
			return nil
		}, bindClaim, cl.Scope, cl.Key, cl.Token, string(idempotency.Stored), string(idempotency.Running))
	}
}

func markBound(cs []*idempotency.Claim, err error) error {
	if err == nil {
		for _, cl := range cs {
			cl.MarkBound()
		}
	}
	return err
}

// claimWriter is Conn.Write with claims: a statement or batch whose
// context carries claims runs in a transaction that binds them.
type claimWriter struct {
	Querier
	c *claimConn
}

func (w claimWriter) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	if len(idempotency.Pending(ctx)) == 0 {
		return w.Querier.Exec(ctx, query, args...)
	}
	var n int64
	err := w.c.Tx(ctx, func(q Querier) error {
		var err error
		n, err = q.Exec(ctx, query, args...)
		return err
	})
	return n, err
}

func (w claimWriter) Batch(ctx context.Context, b *Batch) error {
	if len(idempotency.Pending(ctx)) == 0 {
		return w.Querier.Batch(ctx, b)
	}
	return w.c.Tx(ctx, func(q Querier) error { return q.Batch(ctx, b) })
}
