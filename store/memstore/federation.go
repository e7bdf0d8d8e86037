package memstore

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/federation"
	"github.com/latchkey/latchkey/identity"
)

var _ federation.Store = (*Store)(nil)

// fedData holds upstream identity providers and links (maps made on
// first write).
type fedData struct {
	providers map[[2]string]federation.Provider // by tenant, id
	links     map[[3]string]federation.Link     // by tenant, provider, subject
}

func cloneProvider(p federation.Provider) federation.Provider {
	p.ClientSecret = slices.Clone(p.ClientSecret)
	p.Scopes, p.AllowedDomains, p.DefaultRoles = slices.Clone(p.Scopes), slices.Clone(p.AllowedDomains), slices.Clone(p.DefaultRoles)
	p.Claims, p.RequiredClaims = maps.Clone(p.Claims), maps.Clone(p.RequiredClaims)
	return p
}

// CreateIdentityProvider implements federation.Store.
func (s *Store) CreateIdentityProvider(ctx context.Context, p federation.Provider) error {
	defer s.lock()()
	if s.fed.providers == nil {
		s.fed.providers = map[[2]string]federation.Provider{}
	}
	return insert(s.fed.providers, [2]string{p.TenantID, p.ID}, cloneProvider(p), "the tenant has an identity provider of this id")
}

// GetIdentityProvider implements federation.Store.
func (s *Store) GetIdentityProvider(ctx context.Context, tenantID, id string) (federation.Provider, error) {
	defer s.lock()()
	return get(s.fed.providers, [2]string{tenantID, id}, nil, cloneProvider, "identity provider not found")
}

// ListIdentityProviders implements federation.Store.
func (s *Store) ListIdentityProviders(ctx context.Context, tenantID string) ([]federation.Provider, error) {
	defer s.lock()()
	out := []federation.Provider{}
	for k, p := range s.fed.providers {
		if k[0] == tenantID {
			out = append(out, cloneProvider(p))
		}
	}
	slices.SortFunc(out, func(a, b federation.Provider) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// UpdateIdentityProvider implements federation.Store.
func (s *Store) UpdateIdentityProvider(ctx context.Context, p federation.Provider) error {
	defer s.lock()()
	return update(s.fed.providers, [2]string{p.TenantID, p.ID}, nil, "identity provider not found", func(old *federation.Provider) error {
		created := old.CreatedAt
		*old = cloneProvider(p)
		old.CreatedAt = created
		return nil
	})
}

// DeleteIdentityProvider implements federation.Store.
func (s *Store) DeleteIdentityProvider(ctx context.Context, tenantID, id string) error {
	defer s.lock()()
	if err := remove(s.fed.providers, [2]string{tenantID, id}, nil, "identity provider not found"); err != nil {
		return err
	}
	for k := range s.fed.links {
		if k[0] == tenantID && k[1] == id {
			delete(s.fed.links, k)
		}
	}
	return nil
}

// CreateFederatedIdentity implements federation.Store.
func (s *Store) CreateFederatedIdentity(ctx context.Context, l federation.Link) error {
	defer s.lock()()
	if s.fed.links == nil {
		s.fed.links = map[[3]string]federation.Link{}
	}
	return insertUnique(s.fed.links, [3]string{l.TenantID, l.ProviderID, l.Subject}, l, "the upstream identity is linked already",
		func(o federation.Link) bool {
			return o.TenantID == l.TenantID && o.ProviderID == l.ProviderID && o.UserID == l.UserID
		},
		"the user has a link of this provider")
}

// GetFederatedIdentity implements federation.Store.
func (s *Store) GetFederatedIdentity(ctx context.Context, tenantID, providerID, subject string) (federation.Link, error) {
	defer s.lock()()
	return get(s.fed.links, [3]string{tenantID, providerID, subject}, nil, func(l federation.Link) federation.Link { return l }, "linked identity not found")
}

// ListFederatedIdentities implements federation.Store.
func (s *Store) ListFederatedIdentities(ctx context.Context, tenantID string, userID identity.ObjectID) ([]federation.Link, error) {
	defer s.lock()()
	out := []federation.Link{}
	for _, l := range s.fed.links {
		if l.TenantID == tenantID && l.UserID == userID {
			out = append(out, l)
		}
	}
	slices.SortFunc(out, func(a, b federation.Link) int { return strings.Compare(a.ProviderID, b.ProviderID) })
	return out, nil
}

// DeleteFederatedIdentity implements federation.Store.
func (s *Store) DeleteFederatedIdentity(ctx context.Context, tenantID string, userID identity.ObjectID, providerID string) error {
	defer s.lock()()
	for k, l := range s.fed.links {
		if l.TenantID == tenantID && l.UserID == userID && l.ProviderID == providerID {
			delete(s.fed.links, k)
			return nil
		}
	}
	return fault.E(fault.NotFound, "linked identity not found")
}

// deleteUserLinks removes a deleted user's links (the lock held).
func (s *Store) deleteUserLinks(tenantID string, id identity.ObjectID) {
	for k, l := range s.fed.links {
		if l.TenantID == tenantID && l.UserID == id {
			delete(s.fed.links, k)
		}
	}
}

// FindUsersByEmail implements federation.Store.
func (s *Store) FindUsersByEmail(ctx context.Context, tenantID, email string) ([]identity.ObjectID, error) {
	defer s.lock()()
	out := []identity.ObjectID{}
	for id, u := range s.users {
		if u.TenantID == tenantID && u.Email != "" && strings.ToLower(u.Email) == strings.ToLower(email) {
			out = append(out, id)
		}
	}
	slices.SortFunc(out, func(a, b identity.ObjectID) int { return strings.Compare(string(a[:]), string(b[:])) })
	if len(out) > 2 {
		out = out[:2]
	}
	return out, nil
}
