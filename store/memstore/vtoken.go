package memstore

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/vtoken"
)

type vtokenData struct {
	exchange map[string][]byte               // by tenant
	tokens   map[string]vtoken.Token         // by tenant/user/id
	certs    map[string][]vtoken.Certificate // by tenant/user/id
}

func tokenKey(tenantID, userID, id string) string { return tenantID + "/" + userID + "/" + id }

// GetExchangeKey implements vtoken.Store.
func (s *Store) GetExchangeKey(ctx context.Context, tenantID string) ([]byte, error) {
	defer s.lock()()
	return get(s.vt.exchange, tenantID, nil, slices.Clone, "exchange key not found")
}

// PutExchangeKey implements vtoken.Store. The first key put for a tenant
// stays; later puts get it back.
func (s *Store) PutExchangeKey(ctx context.Context, tenantID string, sealed []byte) ([]byte, error) {
	defer s.lock()()
	if _, ok := s.vt.exchange[tenantID]; !ok {
		s.vt.exchange[tenantID] = slices.Clone(sealed)
	}
	return slices.Clone(s.vt.exchange[tenantID]), nil
}

// CreateToken implements vtoken.Store.
func (s *Store) CreateToken(ctx context.Context, t vtoken.Token, maxPerUser int) error {
	defer s.lock()()
	n := 0
	for _, o := range s.vt.tokens {
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
	return s.withClaims(ctx, func() error {
		t.CertificateCount = 0 // counted when read
		s.vt.tokens[tokenKey(t.TenantID, t.UserID, t.ID)] = t
		return nil
	})
}

// withCount returns t with its CertificateCount, which is not stored.
func (d *vtokenData) withCount(t vtoken.Token) vtoken.Token {
	t.CertificateCount = len(d.certs[tokenKey(t.TenantID, t.UserID, t.ID)])
	return t
}

// GetToken implements vtoken.Store.
func (s *Store) GetToken(ctx context.Context, tenantID, userID, id string) (vtoken.Token, error) {
	defer s.lock()()
	return get(s.vt.tokens, tokenKey(tenantID, userID, id), nil, s.vt.withCount, "token not found")
}

// ListTokens implements vtoken.Store.
func (s *Store) ListTokens(ctx context.Context, tenantID, userID string) ([]vtoken.Token, error) {
	defer s.lock()()
	users := func(t vtoken.Token) bool { return t.TenantID == tenantID && t.UserID == userID }
	out := appendMatching([]vtoken.Token{}, s.vt.tokens, users, s.vt.withCount)
	sortByTimeID(out, func(t vtoken.Token) (time.Time, string) { return t.CreatedAt, t.ID })
	return out, nil
}

// UpdateToken implements vtoken.Store.
func (s *Store) UpdateToken(ctx context.Context, tenantID, userID, id string, fn func(*vtoken.Token) error) (vtoken.Token, error) {
	defer s.lock()()
	var updated vtoken.Token
	err := update(s.vt.tokens, tokenKey(tenantID, userID, id), nil, "token not found", func(old *vtoken.Token) error {
		t := s.vt.withCount(*old)
		if err := fn(&t); err != nil {
			return err
		}
		old.Label, old.State, old.User, old.Admin, old.UpdatedAt = t.Label, t.State, t.User, t.Admin, t.UpdatedAt
		updated = s.vt.withCount(*old)
		return nil
	})
	return updated, err
}

// DeleteToken implements vtoken.Store.
func (s *Store) DeleteToken(ctx context.Context, tenantID, userID, id string) error {
	defer s.lock()()
	k := tokenKey(tenantID, userID, id)
	if err := remove(s.vt.tokens, k, nil, "token not found"); err != nil {
		return err
	}
	delete(s.vt.certs, k)
	return nil
}

// AddCertificates implements vtoken.Store. A certificate replaces any of
// the token's with the same thumbprint.
func (s *Store) AddCertificates(ctx context.Context, tenantID, userID, tokenID string, certs []vtoken.Certificate, now time.Time) error {
	defer s.lock()()
	return s.withClaims(ctx, func() error {
		k := tokenKey(tenantID, userID, tokenID)
		return update(s.vt.tokens, k, nil, "token not found", func(t *vtoken.Token) error {
			if t.State == vtoken.StateComplete {
				return fault.E(fault.Conflict, "token is complete")
			}
			list := s.vt.certs[k]
			for _, c := range certs {
				list = slices.DeleteFunc(list, func(o vtoken.Certificate) bool { return o.Thumbprint == c.Thumbprint })
				c.TenantID, c.TokenID = tenantID, tokenID
				list = append(list, cloneCert(c))
			}
			s.vt.certs[k] = list
			t.UpdatedAt = now
			return nil
		})
	})
}

// ListCertificates implements vtoken.Store.
func (s *Store) ListCertificates(ctx context.Context, tenantID, userID, tokenID string) ([]vtoken.Certificate, error) {
	defer s.lock()()
	k := tokenKey(tenantID, userID, tokenID)
	if _, err := lookup(s.vt.tokens, k, nil, "token not found"); err != nil {
		return nil, err
	}
	out := []vtoken.Certificate{}
	for _, c := range s.vt.certs[k] {
		out = append(out, cloneCert(c))
	}
	slices.SortFunc(out, func(a, b vtoken.Certificate) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.Position, b.Position), cmp.Compare(a.Thumbprint, b.Thumbprint))
	})
	return out, nil
}
