package memstore

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/authenticator"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

var _ authenticator.Store = (*Store)(nil)

// authnData holds area C: authenticators and challenges by tenant/id.
type authnData struct {
	auths      map[string]authenticator.Authenticator
	challenges map[string]authenticator.Challenge
}

func (s *Store) authn() *authnData {
	if s.authnArea == nil {
		s.authnArea = &authnData{auths: map[string]authenticator.Authenticator{}, challenges: map[string]authenticator.Challenge{}}
	}
	return s.authnArea
}

func cloneAuthenticator(a authenticator.Authenticator) authenticator.Authenticator {
	a.PublicKey = slices.Clone(a.PublicKey)
	if a.LastUsedAt != nil {
		t := *a.LastUsedAt
		a.LastUsedAt = &t
	}
	if a.LastSuccessAt != nil {
		t := *a.LastSuccessAt
		a.LastSuccessAt = &t
	}
	return a
}

// CreateAuthenticator implements authenticator.Store.
func (s *Store) CreateAuthenticator(ctx context.Context, a authenticator.Authenticator) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.authn().auths
	if _, ok := m[a.TenantID+"/"+a.ID]; ok {
		return fault.E(fault.Conflict, "authenticator exists")
	}
	m[a.TenantID+"/"+a.ID] = cloneAuthenticator(a)
	return nil
}

// GetAuthenticator implements authenticator.Store.
func (s *Store) GetAuthenticator(ctx context.Context, tenantID, id string) (authenticator.Authenticator, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.authn().auths[tenantID+"/"+id]
	if !ok {
		return authenticator.Authenticator{}, fault.E(fault.NotFound, "authenticator not found")
	}
	return cloneAuthenticator(a), nil
}

// ListAuthenticators implements authenticator.Store.
func (s *Store) ListAuthenticators(ctx context.Context, tenantID string, userID identity.ObjectID, offset, limit int) ([]authenticator.Authenticator, int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var all []authenticator.Authenticator
	for _, a := range s.authn().auths {
		if a.TenantID == tenantID && a.UserID == userID {
			all = append(all, a)
		}
	}
	slices.SortFunc(all, func(a, b authenticator.Authenticator) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	out := []authenticator.Authenticator{}
	for i := offset; i >= 0 && i < len(all) && len(out) < limit; i++ {
		out = append(out, cloneAuthenticator(all[i]))
	}
	return out, len(all), nil
}

// UpdateAuthenticator implements authenticator.Store.
func (s *Store) UpdateAuthenticator(ctx context.Context, a authenticator.Authenticator, prevUpdatedAt time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.authn().auths
	cur, ok := m[a.TenantID+"/"+a.ID]
	if !ok {
		return fault.E(fault.NotFound, "authenticator not found")
	}
	if !cur.UpdatedAt.Equal(prevUpdatedAt) {
		return fault.E(fault.Conflict, "authenticator changed")
	}
	n := cloneAuthenticator(a)
	cur.State, cur.FriendlyName, cur.SignCount = n.State, n.FriendlyName, n.SignCount
	cur.LastUsedAt, cur.LastSuccessAt, cur.UpdatedAt = n.LastUsedAt, n.LastSuccessAt, n.UpdatedAt
	m[a.TenantID+"/"+a.ID] = cur
	return nil
}

// DeleteAuthenticator implements authenticator.Store.
func (s *Store) DeleteAuthenticator(ctx context.Context, tenantID, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.authn().auths
	if _, ok := m[tenantID+"/"+id]; !ok {
		return fault.E(fault.NotFound, "authenticator not found")
	}
	delete(m, tenantID+"/"+id)
	return nil
}

// CreateChallenge implements authenticator.Store.
func (s *Store) CreateChallenge(ctx context.Context, c authenticator.Challenge) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.authn().challenges
	for k, o := range m {
		if o.ExpiresAt.Before(c.CreatedAt) {
			delete(m, k)
		}
	}
	if _, ok := m[c.TenantID+"/"+c.Value]; ok {
		return fault.E(fault.Conflict, "challenge exists")
	}
	m[c.TenantID+"/"+c.Value] = c
	return nil
}

// TakeChallenge implements authenticator.Store.
func (s *Store) TakeChallenge(ctx context.Context, tenantID, value string) (authenticator.Challenge, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.authn().challenges
	c, ok := m[tenantID+"/"+value]
	if !ok {
		return authenticator.Challenge{}, fault.E(fault.NotFound, "challenge not found")
	}
	delete(m, tenantID+"/"+value)
	return c, nil
}

var _ authenticator.BatchStore = (*Store)(nil)

// CreateAuthenticators implements authenticator.BatchStore.
func (s *Store) CreateAuthenticators(ctx context.Context, as []authenticator.Authenticator) ([]error, error) {
	errs := make([]error, len(as))
	for i, a := range as {
		errs[i] = s.CreateAuthenticator(ctx, a)
	}
	return errs, nil
}

var _ authenticator.AuditedBatchStore = (*Store)(nil)

// CreateAuthenticatorsAudited implements authenticator.AuditedBatchStore:
// the authenticators and their records under one lock hold.
func (s *Store) CreateAuthenticatorsAudited(ctx context.Context, as []authenticator.Authenticator, ok, conflict []*audit.Record) ([]error, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.authn().auths
	errs := make([]error, len(as))
	var recs []*audit.Record
	for i, a := range as {
		rec := ok[i]
		if _, dup := m[a.TenantID+"/"+a.ID]; dup {
			errs[i], rec = fault.E(fault.Conflict, "authenticator exists"), conflict[i]
		} else {
			m[a.TenantID+"/"+a.ID] = cloneAuthenticator(a)
		}
		if rec != nil {
			recs = append(recs, rec)
		}
	}
	s.appendAuditLocked(recs)
	return errs, nil
}
