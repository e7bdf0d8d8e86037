package identity

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/latchkey/latchkey/fault"
)

// Revocation by subject. Authenticate refuses a token whose subject (a user
// id or a client id) was revoked at or after the token's iat. The check
// runs after signature verification, so the verified-token cache still
// spares the signature, and reads an in-memory map, so it costs a map
// lookup per request: revocations made through this Service are in the map
// at once; those made through another process (another Service on the same
// store) are read from the store at most every revocationRefresh, so they
// take effect here within that delay (5 seconds).
//
// iat has whole seconds, so a token issued in the same second as a
// revocation, even just after it, is refused too: the subject logs in again
// a second later.
const (
	// revocationRefresh bounds how long a revocation made through another
	// process may go unseen here.
	revocationRefresh = 5 * time.Second
	// revocationOverlap is re-read at every refresh, so that a row whose At
	// is a little before the newest seen (clock skew between processes, or
	// a transaction that committed late) is not missed.
	revocationOverlap = 30 * time.Second
)

type revocations struct {
	ttl time.Duration // the longest token lifetime

	mu     sync.RWMutex
	latest map[string]time.Time // tenant "\x00" subject -> latest At
	tokens map[string]time.Time // jti of a token revoked alone -> its exp
	empty  atomic.Bool          // latest and tokens have no entry: the check is one load

	refreshMu sync.Mutex
	due       atomic.Int64 // unix nanoseconds of the next refresh; 0: never loaded
	watermark time.Time    // newest At read from the store; under refreshMu
	tokMark   time.Time    // newest RevokedAt of a revoked token read; under refreshMu
}

func revocationKey(tenantID, subject string) string { return tenantID + "\x00" + subject }

// note records a revocation in the map.
func (rv *revocations) note(r Revocation) {
	k := revocationKey(r.TenantID, r.Subject)
	rv.mu.Lock()
	if rv.latest == nil {
		rv.latest = map[string]time.Time{}
	}
	if r.At.After(rv.latest[k]) {
		rv.latest[k] = r.At
	}
	rv.empty.Store(false)
	rv.mu.Unlock()
}

// noteToken records a token revoked by its jti.
func (rv *revocations) noteToken(t RevokedToken) {
	rv.mu.Lock()
	if rv.tokens == nil {
		rv.tokens = map[string]time.Time{}
	}
	rv.tokens[t.JTI] = t.ExpiresAt
	rv.empty.Store(false)
	rv.mu.Unlock()
}

// expedite makes the next check read the store, for a revocation made
// through another process that announced it (see Service.RevocationsChanged).
func (rv *revocations) expedite() { rv.due.Store(0) }

// refresh reads the revocations stored since the last refresh (the last
// token lifetime on the first) when one is due, and drops entries that can
// no longer refuse an unexpired token.
func (rv *revocations) refresh(ctx context.Context, st Store, now time.Time) error {
	if d := rv.due.Load(); d != 0 && now.UnixNano() < d {
		return nil
	}
	rv.refreshMu.Lock()
	defer rv.refreshMu.Unlock()
	if d := rv.due.Load(); d != 0 && now.UnixNano() < d {
		return nil // another caller refreshed while this one waited
	}
	since := now.Add(-rv.ttl)
	if w := rv.watermark.Add(-revocationOverlap); w.After(since) {
		since = w
	}
	rows, err := st.ListRevocations(ctx, since)
	if err != nil {
		return err
	}
	tokSince := now.Add(-rv.ttl)
	if w := rv.tokMark.Add(-revocationOverlap); w.After(tokSince) {
		tokSince = w
	}
	toks, err := st.ListRevokedTokens(ctx, tokSince)
	if err != nil {
		return err
	}
	for _, r := range rows {
		rv.note(r)
		if r.At.After(rv.watermark) {
			rv.watermark = r.At
		}
	}
	for _, t := range toks {
		rv.noteToken(t)
		if t.RevokedAt.After(rv.tokMark) {
			rv.tokMark = t.RevokedAt
		}
	}
	rv.mu.Lock()
	for k, at := range rv.latest {
		if !at.Add(rv.ttl).After(now) {
			delete(rv.latest, k)
		}
	}
	for jti, exp := range rv.tokens {
		if !exp.After(now) {
			delete(rv.tokens, jti)
		}
	}
	rv.empty.Store(len(rv.latest) == 0 && len(rv.tokens) == 0)
	rv.mu.Unlock()
	rv.due.Store(now.Add(revocationRefresh).UnixNano())
	return nil
}

// revoked reports whether a token of subject issued at iat, with id jti,
// is revoked, by its subject or alone.
func (rv *revocations) revoked(tenantID, subject, jti string, iat time.Time) bool {
	if rv.empty.Load() {
		return false
	}
	rv.mu.RLock()
	at, ok := rv.latest[revocationKey(tenantID, subject)]
	_, alone := rv.tokens[jti]
	rv.mu.RUnlock()
	return alone || (ok && !at.Before(iat))
}

// maxTokenTTL is the longest lifetime of a token this Service issues or
// accepts, which bounds how long a revocation matters.
func (s *Service) maxTokenTTL() time.Duration {
	return max(s.cfg.PlatformTokenTTL, s.cfg.AccessTokenTTL)
}

// RevokeSubject refuses, from now on, every token of subject in tenantID
// issued until now: platform JWTs and OAuth access tokens whose sub is
// subject (a user id, or a client id for client tokens). It takes effect at
// once in this process and within 5 seconds in others on the same store.
// It checks no permission: it is for the areas that delete what a subject
// names (see identity/clients DeleteClient), which check their own.
func (s *Service) RevokeSubject(ctx context.Context, tenantID, subject string) error {
	if tenantID == "" || subject == "" {
		return fault.E(fault.Invalid, "tenant and subject are required")
	}
	at := s.now()
	r := Revocation{TenantID: tenantID, Subject: subject, At: at, Until: at.Add(s.maxTokenTTL())}
	if err := s.st.RevokeSubject(ctx, r); err != nil {
		return err
	}
	s.revs.note(r)
	s.announce(ctx)
	return nil
}

// checkRevoked refuses c when its subject was revoked at or after its iat.
// When a refresh is due and the store fails, the request fails too (closed,
// not open): a revocation is never skipped because the store was down.
func (s *Service) checkRevoked(ctx context.Context, c *Claims) error {
	if err := s.revs.refresh(ctx, s.st, s.cfg.Clock.Now()); err != nil {
		return err
	}
	if c.IssuedAt == nil {
		return nil
	}
	// A token issued to a client for a user (sub the user) goes with its
	// client too: deleting a client revokes its id as a subject.
	if s.revs.revoked(c.TenantID, c.Subject, c.ID, c.IssuedAt.Time) ||
		(c.ClientID != "" && c.ClientID != c.Subject && s.revs.revoked(c.TenantID, c.ClientID, "", c.IssuedAt.Time)) {
		return fault.E(fault.Unauthenticated, "token revoked")
	}
	return nil
}
