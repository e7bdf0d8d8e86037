// Package idempotency makes creating requests safe to retry: the answer to
// the first request that carried a key is kept, and a retry with the same
// key gets that answer again instead of writing a second time
// (draft-ietf-httpapi-idempotency-key-header).
//
// # How a key is kept with its write
//
// A key's life is two-phase, reserve then complete, and the step between
// them, binding, is part of the request's own write transaction:
//
//  1. Reserve (Store.ReserveIdempotencyKeys, a small transaction shared
//     by the requests reserving at the same moment) records the key as running, with the request's fingerprint and
//     a random token, before the request does anything. A second request
//     with the key finds the row and is told to wait (409), or that its
//     body differs (422), or gets the kept answer.
//  2. Bind: the request's context carries a Claim (WithClaim). The first
//     write transaction the request commits through the store also marks
//     the key as stored, under the reservation's token, in that same
//     transaction; if the token no longer matches (the reservation lapsed
//     and a retry took it over) the write is rolled back. So the write and
//     "this key's write is done" commit together or not at all, on every
//     database, even when the connection is lost during the commit (the
//     store resolves the commit's outcome before answering). Writes that
//     are group-committed for many requests (event posts) carry every
//     request's claim into their one transaction (WithClaims).
//  3. Finish (Store.FinishIdempotencyKeys, again one transaction for
//     the requests finishing together) stores the status and body the
//     server answered, before the answer leaves the server.
//
// Where the answer is known before the commit, it is kept in the write's
// transaction too: the HTTP layer says how it encodes a result
// (EncodeAnswer) and the service hands over its result as a function
// (PrepareAnswer), which the store calls inside the transaction once the
// values it assigns in place (ids, seqs) are set. Event posts do this, so
// a post's answer commits with its events and a retry after a crash
// between the commit and the answer is given the answer. Other creating
// routes render their answer from what the service returns after the
// store call has committed (carrying that rendering into every area's
// store transaction would tie each store to the HTTP layer): what matters
// for a retry, that the write happens at most once, is in the
// transaction, and the answer follows a moment later. If the process dies
// (or the database goes away) in that moment, a retry finds the key
// stored without an answer and is answered 409 (Lost) rather than
// writing again.
//
// An answer of 5xx or 429 is not kept: the key is released (nothing was
// stored under it, as a 5xx promises), so the retry runs afresh. Should
// the request's write have been stored all the same (a step after it, its
// audit record, failed), the key stays stored without an answer: a retry
// is refused (409) rather than run again.
package idempotency

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"sync/atomic"
	"time"
)

const (
	// TTL is how long a key and its answer are kept after the first
	// request reserved it.
	TTL = 24 * time.Hour
	// Lease is how long a reservation whose request has not finished holds
	// the key: a retry within it is told the first is still running (409);
	// after it (the first request's process died) a retry takes the key
	// over, and the first request, should it still try to write, is
	// rolled back. It is short because a client whose request's process
	// was killed waits out the lease before its retry runs (bench/chaos:
	// posters stalled for up to a minute after a kill with a minute's
	// lease); the rollback keeps a slower first request from writing
	// twice.
	Lease = 10 * time.Second
	// MaxKeyLength bounds a key, in bytes.
	MaxKeyLength = 255
)

// State is where a key is in its life.
type State string

const (
	// Running: reserved, nothing stored under it yet.
	Running State = "running"
	// Stored: the request's write committed; its answer is not kept yet.
	Stored State = "stored"
	// Done: the answer is kept.
	Done State = "done"
)

// Entry is one key as the store keeps it.
type Entry struct {
	Scope string // whose key: the tenant and credential that sent it
	Key   string
	// Fingerprint is a digest of the request (method, path, body): a
	// retry must send the same.
	Fingerprint []byte
	// Token identifies the reservation; binding and completion must name
	// it.
	Token      string
	State      State
	CreatedAt  time.Time
	LeaseUntil time.Time // a Running or Stored key's reservation ends
	ExpiresAt  time.Time // the key is forgotten
	// Status, ContentType and Body are the kept answer (Done only).
	Status      int
	ContentType string
	Body        []byte
}

// Store keeps keys. Implementations bind a Claim carried in a write's
// context (see the package doc) in that write's transaction. Keys are
// reserved and finished in batches, so that concurrent requests share
// their commits (as audit records and event posts do).
type Store interface {
	// ReserveIdempotencyKeys reserves es in one transaction, in order,
	// and returns, for each, the entry that holds its key now: e itself
	// (same Token) when it was reserved. A key is reserved when no entry
	// holds it, or the entry holding it expired (ExpiresAt) or is Running
	// past its LeaseUntil with the same fingerprint; otherwise the holder
	// is returned. A key given twice is the earlier's for the later.
	ReserveIdempotencyKeys(ctx context.Context, es []Entry, now time.Time) ([]Entry, error)
	// FinishIdempotencyKeys records answers in one transaction: each
	// reservation named by its token is made Done with the answer, or
	// deleted when Release is set and it is still Running (a Stored key,
	// bound by a write whose commit's outcome its request never learnt,
	// stays). A reservation that is gone or was taken over by another
	// token is left as it is.
	FinishIdempotencyKeys(ctx context.Context, as []Answer) error
	// PurgeIdempotencyKeys deletes up to limit entries expired at now and
	// returns how many it deleted.
	PurgeIdempotencyKeys(ctx context.Context, now time.Time, limit int) (int, error)
}

// Answer is how a reservation ends: its kept answer, or its release.
type Answer struct {
	Scope, Key, Token string
	// Release deletes the reservation (the key can be used again)
	// instead of keeping an answer.
	Release     bool
	Status      int
	ContentType string
	Body        []byte
}

// Claim is a reservation carried in a request's context to the store,
// which binds it in the request's first committed write.
type Claim struct {
	Scope, Key, Token string
	bound             atomic.Bool

	mu     sync.Mutex
	encode func(v any) (status int, contentType string, body []byte)
	result func() any
}

// EncodeAnswer tells the claims ctx carries how their request turns its
// result into the answer it sends (the HTTP layer's status and encoding),
// so that a store can keep that answer in the write's own transaction
// once the service has prepared the result (PrepareAnswer).
func EncodeAnswer(ctx context.Context, enc func(v any) (status int, contentType string, body []byte)) {
	cs, _ := ctx.Value(claimsKey{}).([]*Claim)
	for _, c := range cs {
		c.mu.Lock()
		c.encode = enc
		c.mu.Unlock()
	}
}

// PrepareAnswer gives the claims ctx carries the result their request
// answers with if its write commits. The store calls result inside the
// write's transaction, after the write's statements are queued (so values
// the store assigns in place, such as ids, are set), and keeps the encoded
// answer in that transaction: a retry then gets the answer even if the
// process dies between the commit and the answer, instead of being told
// the answer was lost. Without an encoder (EncodeAnswer) it does nothing.
func PrepareAnswer(ctx context.Context, result func() any) {
	cs, _ := ctx.Value(claimsKey{}).([]*Claim)
	for _, c := range cs {
		c.mu.Lock()
		c.result = result
		c.mu.Unlock()
	}
}

// PreparedAnswer returns the answer the claim's request will send, when
// both its encoding and its result were given (EncodeAnswer,
// PrepareAnswer); stores call it inside the write's transaction.
func (c *Claim) PreparedAnswer() (a Answer, ok bool) {
	c.mu.Lock()
	enc, res := c.encode, c.result
	c.mu.Unlock()
	if enc == nil || res == nil {
		return Answer{}, false
	}
	a = Answer{Scope: c.Scope, Key: c.Key, Token: c.Token}
	a.Status, a.ContentType, a.Body = enc(res())
	if a.Body == nil {
		a.Body = []byte{}
	}
	return a, true
}

// Bound reports whether a write carrying the claim has committed.
func (c *Claim) Bound() bool { return c.bound.Load() }

// MarkBound records that a write carrying the claim committed; stores
// call it once the commit is known to have succeeded.
func (c *Claim) MarkBound() { c.bound.Store(true) }

type claimsKey struct{}

// WithClaim returns ctx carrying c (replacing any claims it carried).
func WithClaim(ctx context.Context, c *Claim) context.Context {
	return context.WithValue(ctx, claimsKey{}, []*Claim{c})
}

// WithClaims returns ctx carrying cs: the claims of the requests whose
// writes one group commit holds.
func WithClaims(ctx context.Context, cs []*Claim) context.Context {
	if len(cs) == 0 {
		return Detach(ctx)
	}
	return context.WithValue(ctx, claimsKey{}, cs)
}

// Detach returns ctx without claims, for a write made during a request
// that is not the request's own (a service instance created on the side).
func Detach(ctx context.Context) context.Context {
	if ctx.Value(claimsKey{}) == nil {
		return ctx
	}
	return context.WithValue(ctx, claimsKey{}, []*Claim(nil))
}

// Pending returns ctx's claims that no committed write has bound yet.
func Pending(ctx context.Context) []*Claim {
	cs, _ := ctx.Value(claimsKey{}).([]*Claim)
	var out []*Claim
	for _, c := range cs {
		if !c.Bound() {
			out = append(out, c)
		}
	}
	return out
}

// NewToken returns a random reservation token.
func NewToken() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
