package memstore

import (
	"bytes"
	"context"
	"slices"
	"time"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/idempotency"
)

var _ idempotency.Store = (*Store)(nil)

type idemKey struct{ scope, key string }

// ReserveIdempotencyKeys implements idempotency.Store.
func (s *Store) ReserveIdempotencyKeys(_ context.Context, es []idempotency.Entry, now time.Time) ([]idempotency.Entry, error) {
	defer s.lock()()
	out := make([]idempotency.Entry, len(es))
	for i, e := range es {
		out[i] = s.reserveLocked(e, now)
	}
	return out, nil
}

func (s *Store) reserveLocked(e idempotency.Entry, now time.Time) idempotency.Entry {
	k := idemKey{e.Scope, e.Key}
	if got, ok := s.idem[k]; ok {
		lapsed := got.State == idempotency.Running && !now.Before(got.LeaseUntil) && bytes.Equal(got.Fingerprint, e.Fingerprint)
		if now.Before(got.ExpiresAt) && !lapsed {
			return cloneIdem(got)
		}
	}
	e.State = idempotency.Running
	e.Status, e.ContentType, e.Body = 0, "", []byte{}
	e.Fingerprint = slices.Clone(e.Fingerprint)
	s.idem[k] = e
	return cloneIdem(e)
}

// FinishIdempotencyKeys implements idempotency.Store.
func (s *Store) FinishIdempotencyKeys(_ context.Context, as []idempotency.Answer) error {
	defer s.lock()()
	for _, a := range as {
		k := idemKey{a.Scope, a.Key}
		e, ok := s.idem[k]
		if !ok || e.Token != a.Token {
			continue
		}
		if a.Release {
			if e.State == idempotency.Running {
				delete(s.idem, k)
			}
			continue
		}
		e.State, e.Status, e.ContentType, e.Body = idempotency.Done, a.Status, a.ContentType, append([]byte{}, a.Body...)
		s.idem[k] = e
	}
	return nil
}

// PurgeIdempotencyKeys implements idempotency.Store.
func (s *Store) PurgeIdempotencyKeys(_ context.Context, now time.Time, limit int) (int, error) {
	defer s.lock()()
	n := 0
	for k, e := range s.idem {
		if n == limit {
			break
		}
		if !now.Before(e.ExpiresAt) {
			delete(s.idem, k)
			n++
		}
	}
	return n, nil
}

func cloneIdem(e idempotency.Entry) idempotency.Entry {
	e.Fingerprint = slices.Clone(e.Fingerprint)
	e.Body = slices.Clone(e.Body)
	return e
}

// withClaims runs write, a creating write under the lock, only if the
// claims ctx carries (see package idempotency) are still held, and binds
// them when it succeeds: the write and the binding happen together. It
// fails, writing nothing, when a claim's reservation lapsed and a retry
// took the key over.
func (s *Store) withClaims(ctx context.Context, write func() error) error {
	cs := idempotency.Pending(ctx)
	for _, cl := range cs {
		e, ok := s.idem[idemKey{cl.Scope, cl.Key}]
		if !ok || e.Token != cl.Token || e.State != idempotency.Running {
			return fault.E(fault.Conflict, "the Idempotency-Key's reservation lapsed and a retry took it over; this request stored nothing")
		}
	}
	if err := write(); err != nil {
		return err
	}
	for _, cl := range cs {
		k := idemKey{cl.Scope, cl.Key}
		e := s.idem[k]
		e.State = idempotency.Stored
		if a, ok := cl.PreparedAnswer(); ok {
			// Kept with the write, as the SQL stores do (queueAnswers).
			e.State, e.Status, e.ContentType, e.Body = idempotency.Done, a.Status, a.ContentType, a.Body
		}
		s.idem[k] = e
		cl.MarkBound()
	}
	return nil
}
