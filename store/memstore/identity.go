package memstore

import (
	"context"
	"encoding/hex"
	"slices"
	"strings"
	"time"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

var _ identity.Store = (*Store)(nil)

func cloneTenant(t identity.Tenant) identity.Tenant {
	t.Settings.PlanFeatures = slices.Clone(t.Settings.PlanFeatures)
	t.Settings.WebAuthn.Origins = slices.Clone(t.Settings.WebAuthn.Origins)
	t.ExchangeKey = slices.Clone(t.ExchangeKey)
	return t
}

// CreateTenant implements identity.Store.
func (s *Store) CreateTenant(ctx context.Context, t identity.Tenant) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.tenants[t.ID]; ok {
		return fault.E(fault.Conflict, "tenant exists")
	}
	for _, o := range s.tenants {
		if o.Code == t.Code {
			return fault.E(fault.Conflict, "tenant code exists")
		}
	}
	s.tenants[t.ID] = cloneTenant(t)
	return nil
}

// GetTenant implements identity.Store.
func (s *Store) GetTenant(ctx context.Context, id string) (identity.Tenant, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tenants[id]
	if !ok {
		return identity.Tenant{}, fault.E(fault.NotFound, "tenant not found")
	}
	return cloneTenant(t), nil
}

// GetTenantByCode implements identity.Store.
func (s *Store) GetTenantByCode(ctx context.Context, code string) (identity.Tenant, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.tenants {
		if t.Code == code {
			return cloneTenant(t), nil
		}
	}
	return identity.Tenant{}, fault.E(fault.NotFound, "tenant not found")
}

// UpdateTenantSettings implements identity.Store.
func (s *Store) UpdateTenantSettings(ctx context.Context, id string, st identity.Settings) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tenants[id]
	if !ok {
		return fault.E(fault.NotFound, "tenant not found")
	}
	t.Settings = st
	s.tenants[id] = cloneTenant(t)
	return nil
}

func cloneUser(u identity.User) identity.User {
	u.Roles = slices.Clone(u.Roles)
	return u
}

// CreateUser implements identity.Store.
func (s *Store) CreateUser(ctx context.Context, u identity.User) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.users[u.ID]; ok {
		return fault.E(fault.Conflict, "user exists")
	}
	for _, o := range s.users {
		if o.TenantID == u.TenantID && o.Name == u.Name {
			return fault.E(fault.Conflict, "user name exists")
		}
	}
	s.users[u.ID] = cloneUser(u)
	return nil
}

// GetUser implements identity.Store.
func (s *Store) GetUser(ctx context.Context, tenantID string, id identity.ObjectID) (identity.User, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.users[id]
	if !ok || u.TenantID != tenantID {
		return identity.User{}, fault.E(fault.NotFound, "user not found")
	}
	return cloneUser(u), nil
}

// GetUserByName implements identity.Store.
func (s *Store) GetUserByName(ctx context.Context, tenantID, name string) (identity.User, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, u := range s.users {
		if u.TenantID == tenantID && u.Name == name {
			return cloneUser(u), nil
		}
	}
	return identity.User{}, fault.E(fault.NotFound, "user not found")
}

// CreateOAuthClient implements identity.Store.
func (s *Store) CreateOAuthClient(ctx context.Context, c identity.OAuthClient) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.oauthClients[c.ID]; ok {
		return fault.E(fault.Conflict, "client exists")
	}
	c.Scopes = slices.Clone(c.Scopes)
	c.SecretHash = slices.Clone(c.SecretHash)
	c.Resources = slices.Clone(c.Resources)
	s.oauthClients[c.ID] = c
	return nil
}

// GetOAuthClient implements identity.Store.
func (s *Store) GetOAuthClient(ctx context.Context, id string) (identity.OAuthClient, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.oauthClients[id]
	if !ok {
		return identity.OAuthClient{}, fault.E(fault.NotFound, "client not found")
	}
	c.Scopes = slices.Clone(c.Scopes)
	c.SecretHash = slices.Clone(c.SecretHash)
	c.Resources = slices.Clone(c.Resources)
	return c, nil
}

func cloneKey(k identity.APIKey) identity.APIKey {
	k.Areas = slices.Clone(k.Areas)
	k.Hash = slices.Clone(k.Hash)
	if k.UserID != nil {
		u := *k.UserID
		k.UserID = &u
	}
	if k.RevokedAt != nil {
		r := *k.RevokedAt
		k.RevokedAt = &r
	}
	return k
}

// CreateAPIKey implements identity.Store.
func (s *Store) CreateAPIKey(ctx context.Context, k identity.APIKey) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := hex.EncodeToString(k.Hash)
	if _, ok := s.apiKeys[h]; ok {
		return fault.E(fault.Conflict, "api key exists")
	}
	for _, o := range s.apiKeys {
		if o.ID == k.ID {
			return fault.E(fault.Conflict, "api key exists")
		}
	}
	s.apiKeys[h] = cloneKey(k)
	return nil
}

// GetAPIKeyByHash implements identity.Store.
func (s *Store) GetAPIKeyByHash(ctx context.Context, hash []byte) (identity.APIKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.apiKeys[hex.EncodeToString(hash)]
	if !ok {
		return identity.APIKey{}, fault.E(fault.NotFound, "api key not found")
	}
	return cloneKey(k), nil
}

// CreateSigningKey implements identity.Store.
func (s *Store) CreateSigningKey(ctx context.Context, k identity.SigningKey) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range s.signingKeys {
		if o.ID == k.ID {
			return fault.E(fault.Conflict, "signing key exists")
		}
	}
	k.Private, k.Public = slices.Clone(k.Private), slices.Clone(k.Public)
	s.signingKeys = append(s.signingKeys, k)
	return nil
}

// ListSigningKeys implements identity.Store.
func (s *Store) ListSigningKeys(ctx context.Context) ([]identity.SigningKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]identity.SigningKey, len(s.signingKeys))
	for i, k := range s.signingKeys {
		k.Private, k.Public = slices.Clone(k.Private), slices.Clone(k.Public)
		out[i] = k
	}
	return out, nil
}

// CreateRefreshToken implements identity.Store.
func (s *Store) CreateRefreshToken(ctx context.Context, t identity.RefreshToken) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := hex.EncodeToString(t.Hash)
	if _, ok := s.refreshTokens[h]; ok {
		return fault.E(fault.Conflict, "refresh token exists")
	}
	t.Hash = slices.Clone(t.Hash)
	s.refreshTokens[h] = t
	return nil
}

// UseRefreshToken implements identity.Store.
func (s *Store) UseRefreshToken(ctx context.Context, hash []byte, now time.Time) (identity.RefreshToken, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := hex.EncodeToString(hash)
	t, ok := s.refreshTokens[h]
	if !ok {
		return identity.RefreshToken{}, fault.E(fault.NotFound, "refresh token not found")
	}
	delete(s.refreshTokens, h)
	if !now.Before(t.ExpiresAt) {
		return identity.RefreshToken{}, fault.E(fault.NotFound, "refresh token expired")
	}
	return t, nil
}

// RevokeSubject implements identity.Store.
func (s *Store) RevokeSubject(ctx context.Context, r identity.Revocation) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.revocations = slices.DeleteFunc(s.revocations, func(o identity.Revocation) bool { return o.Until.Before(r.At) })
	for _, o := range s.revocations {
		if o.TenantID == r.TenantID && o.Subject == r.Subject && o.At.Equal(r.At) {
			return nil
		}
	}
	s.revocations = append(s.revocations, r)
	return nil
}

// ListRevocations implements identity.Store.
func (s *Store) ListRevocations(ctx context.Context, since time.Time) ([]identity.Revocation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []identity.Revocation
	for _, r := range s.revocations {
		if r.At.After(since) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b identity.Revocation) int {
		if c := a.At.Compare(b.At); c != 0 {
			return c
		}
		if c := strings.Compare(a.TenantID, b.TenantID); c != 0 {
			return c
		}
		return strings.Compare(a.Subject, b.Subject)
	})
	return out, nil
}
