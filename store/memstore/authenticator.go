package memstore

import (
	"context"
	"time"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/authenticator"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// authnData holds area C: authenticators and challenges by tenant/id.
type authnData struct {
	auths      map[string]authenticator.Authenticator
	challenges map[string]authenticator.Challenge
}

// CreateAuthenticator implements authenticator.Store.
func (s *Store) CreateAuthenticator(ctx context.Context, a authenticator.Authenticator) error {
	defer s.lock()()
	return s.withClaims(ctx, func() error {
		return s.insertAuthenticatorLocked(a)
	})
}

// insertAuthenticatorLocked stores a copy of a; s.mu is held.
func (s *Store) insertAuthenticatorLocked(a authenticator.Authenticator) error {
	return insert(s.authn.auths, tenantKey(a.TenantID, a.ID), cloneAuthenticator(a), "authenticator exists")
}

// GetAuthenticator implements authenticator.Store.
func (s *Store) GetAuthenticator(ctx context.Context, tenantID, id string) (authenticator.Authenticator, error) {
	defer s.lock()()
	return get(s.authn.auths, tenantKey(tenantID, id), nil, cloneAuthenticator, "authenticator not found")
}

// ListAuthenticators implements authenticator.Store.
func (s *Store) ListAuthenticators(ctx context.Context, tenantID string, userID identity.ObjectID, offset, limit int) ([]authenticator.Authenticator, int, error) {
	defer s.lock()()
	mine := func(a authenticator.Authenticator) bool { return a.TenantID == tenantID && a.UserID == userID }
	all := appendMatching(nil, s.authn.auths, mine, cloneAuthenticator)
	sortByTimeID(all, func(a authenticator.Authenticator) (time.Time, string) { return a.CreatedAt, a.ID })
	return page(all, offset, limit)
}

// UpdateAuthenticator implements authenticator.Store.
func (s *Store) UpdateAuthenticator(ctx context.Context, a authenticator.Authenticator, prevUpdatedAt time.Time) error {
	defer s.lock()()
	return update(s.authn.auths, tenantKey(a.TenantID, a.ID), nil, "authenticator not found", func(cur *authenticator.Authenticator) error {
		if !cur.UpdatedAt.Equal(prevUpdatedAt) {
			return fault.E(fault.Conflict, "authenticator changed")
		}
		n := cloneAuthenticator(a)
		cur.State, cur.FriendlyName, cur.SignCount = n.State, n.FriendlyName, n.SignCount
		cur.LastUsedAt, cur.LastSuccessAt, cur.UpdatedAt = n.LastUsedAt, n.LastSuccessAt, n.UpdatedAt
		return nil
	})
}

// DeleteAuthenticator implements authenticator.Store.
func (s *Store) DeleteAuthenticator(ctx context.Context, tenantID, id string) error {
	defer s.lock()()
	return remove(s.authn.auths, tenantKey(tenantID, id), nil, "authenticator not found")
}

// CreateChallenge implements authenticator.Store. Expired challenges are
// swept whenever one is created.
func (s *Store) CreateChallenge(ctx context.Context, c authenticator.Challenge) error {
	defer s.lock()()
	m := s.authn.challenges
	for k, o := range m {
		if o.ExpiresAt.Before(c.CreatedAt) {
			delete(m, k)
		}
	}
	return insert(m, tenantKey(c.TenantID, c.Value), c, "challenge exists")
}

// TakeChallenge implements authenticator.Store.
func (s *Store) TakeChallenge(ctx context.Context, tenantID, value string) (authenticator.Challenge, error) {
	defer s.lock()()
	return take(s.authn.challenges, tenantKey(tenantID, value), nil, "challenge not found")
}

// CreateAuthenticators implements authenticator.BatchStore.
func (s *Store) CreateAuthenticators(ctx context.Context, as []authenticator.Authenticator) ([]error, error) {
	noRecords := make([]*audit.Record, len(as))
	return s.CreateAuthenticatorsAudited(ctx, as, noRecords, noRecords)
}

// CreateAuthenticatorsAudited implements authenticator.AuditedBatchStore:
// the authenticators and their records under one lock hold.
func (s *Store) CreateAuthenticatorsAudited(ctx context.Context, as []authenticator.Authenticator, ok, conflict []*audit.Record) ([]error, error) {
	defer s.lock()()
	errs := make([]error, len(as))
	err := s.withClaims(ctx, func() error {
		var recs []*audit.Record
		for i, a := range as {
			rec := ok[i]
			if errs[i] = s.insertAuthenticatorLocked(a); errs[i] != nil {
				rec = conflict[i]
			}
			if rec != nil {
				recs = append(recs, rec)
			}
		}
		s.appendAuditLocked(recs)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return errs, nil
}
