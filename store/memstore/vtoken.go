package memstore

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/vtoken"
)

var _ vtoken.Store = (*Store)(nil)

type vtokenData struct {
	exchange map[string][]byte               // by tenant
	tokens   map[string]vtoken.Token         // by tenant/user/id
	certs    map[string][]vtoken.Certificate // by tenant/user/id
}

func (s *Store) vt() *vtokenData {
	if s.vtoken == nil {
		s.vtoken = &vtokenData{exchange: map[string][]byte{}, tokens: map[string]vtoken.Token{}, certs: map[string][]vtoken.Certificate{}}
	}
	return s.vtoken
}

func tokenKey(tenantID, userID, id string) string { return tenantID + "/" + userID + "/" + id }

func cloneCert(c vtoken.Certificate) vtoken.Certificate {
	c.DER = slices.Clone(c.DER)
	c.PrivateKey = slices.Clone(c.PrivateKey)
	return c
}

// GetExchangeKey implements vtoken.Store.
func (s *Store) GetExchangeKey(ctx context.Context, tenantID string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.vt().exchange[tenantID]
	if !ok {
		return nil, fault.E(fault.NotFound, "exchange key not found")
	}
	return slices.Clone(k), nil
}

// PutExchangeKey implements vtoken.Store.
func (s *Store) PutExchangeKey(ctx context.Context, tenantID string, sealed []byte) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.vt()
	if k, ok := d.exchange[tenantID]; ok {
		return slices.Clone(k), nil
	}
	d.exchange[tenantID] = slices.Clone(sealed)
	return slices.Clone(sealed), nil
}

// CreateToken implements vtoken.Store.
func (s *Store) CreateToken(ctx context.Context, t vtoken.Token, maxPerUser int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.vt()
	n := 0
	for _, o := range d.tokens {
		if o.TenantID == t.TenantID && o.ID == t.ID {
			return fault.E(fault.Conflict, "token exists")
		}
		if o.TenantID == t.TenantID && o.UserID == t.UserID {
			n++
		}
	}
	if n >= maxPerUser {
		return fault.E(fault.Conflict, "too many tokens")
	}
	t.CertificateCount = 0
	d.tokens[tokenKey(t.TenantID, t.UserID, t.ID)] = t
	return nil
}

func (d *vtokenData) get(tenantID, userID, id string) (vtoken.Token, error) {
	t, ok := d.tokens[tokenKey(tenantID, userID, id)]
	if !ok {
		return vtoken.Token{}, fault.E(fault.NotFound, "token not found")
	}
	t.CertificateCount = len(d.certs[tokenKey(tenantID, userID, id)])
	return t, nil
}

// GetToken implements vtoken.Store.
func (s *Store) GetToken(ctx context.Context, tenantID, userID, id string) (vtoken.Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.vt().get(tenantID, userID, id)
}

// ListTokens implements vtoken.Store.
func (s *Store) ListTokens(ctx context.Context, tenantID, userID string) ([]vtoken.Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.vt()
	out := []vtoken.Token{}
	for _, t := range d.tokens {
		if t.TenantID == tenantID && t.UserID == userID {
			t.CertificateCount = len(d.certs[tokenKey(tenantID, userID, t.ID)])
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b vtoken.Token) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

// UpdateToken implements vtoken.Store.
func (s *Store) UpdateToken(ctx context.Context, tenantID, userID, id string, fn func(*vtoken.Token) error) (vtoken.Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.vt()
	old, err := d.get(tenantID, userID, id)
	if err != nil {
		return vtoken.Token{}, err
	}
	t := old
	if err := fn(&t); err != nil {
		return vtoken.Token{}, err
	}
	old.Label, old.State, old.User, old.Admin, old.UpdatedAt = t.Label, t.State, t.User, t.Admin, t.UpdatedAt
	stored := old
	stored.CertificateCount = 0
	d.tokens[tokenKey(tenantID, userID, id)] = stored
	return old, nil
}

// DeleteToken implements vtoken.Store.
func (s *Store) DeleteToken(ctx context.Context, tenantID, userID, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.vt()
	k := tokenKey(tenantID, userID, id)
	if _, ok := d.tokens[k]; !ok {
		return fault.E(fault.NotFound, "token not found")
	}
	delete(d.tokens, k)
	delete(d.certs, k)
	return nil
}

// AddCertificates implements vtoken.Store.
func (s *Store) AddCertificates(ctx context.Context, tenantID, userID, tokenID string, certs []vtoken.Certificate, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.vt()
	k := tokenKey(tenantID, userID, tokenID)
	t, ok := d.tokens[k]
	if !ok {
		return fault.E(fault.NotFound, "token not found")
	}
	if t.State == vtoken.StateComplete {
		return fault.E(fault.Conflict, "token is complete")
	}
	list := d.certs[k]
	for _, c := range certs {
		list = slices.DeleteFunc(list, func(o vtoken.Certificate) bool { return o.Thumbprint == c.Thumbprint })
		c.TenantID, c.TokenID = tenantID, tokenID
		list = append(list, cloneCert(c))
	}
	d.certs[k] = list
	t.UpdatedAt = now
	d.tokens[k] = t
	return nil
}

// ListCertificates implements vtoken.Store.
func (s *Store) ListCertificates(ctx context.Context, tenantID, userID, tokenID string) ([]vtoken.Certificate, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.vt()
	k := tokenKey(tenantID, userID, tokenID)
	if _, ok := d.tokens[k]; !ok {
		return nil, fault.E(fault.NotFound, "token not found")
	}
	out := []vtoken.Certificate{}
	for _, c := range d.certs[k] {
		out = append(out, cloneCert(c))
	}
	slices.SortFunc(out, func(a, b vtoken.Certificate) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.Position, b.Position), cmp.Compare(a.Thumbprint, b.Thumbprint))
	})
	return out, nil
}
