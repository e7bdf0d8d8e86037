package memstore

import (
	"cmp"
	"context"
	"encoding/hex"
	"slices"
	"strings"
	"time"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/filter"
	"github.com/latchkey/latchkey/identity"
)

// CreateTenant implements identity.Store.
func (s *Store) CreateTenant(ctx context.Context, t identity.Tenant) error {
	defer s.lock()()
	return s.withClaims(ctx, func() error {
		sameCode := func(o identity.Tenant) bool { return o.Code == t.Code }
		return insertUnique(s.tenants, t.ID, cloneTenant(t), "tenant exists", sameCode, "tenant code exists")
	})
}

// GetTenant implements identity.Store.
func (s *Store) GetTenant(ctx context.Context, id string) (identity.Tenant, error) {
	defer s.lock()()
	return get(s.tenants, id, nil, cloneTenant, "tenant not found")
}

// GetTenantByCode implements identity.Store.
func (s *Store) GetTenantByCode(ctx context.Context, code string) (identity.Tenant, error) {
	defer s.lock()()
	return find(s.tenants, func(t identity.Tenant) bool { return t.Code == code }, cloneTenant, "tenant not found")
}

// UpdateTenantSettings implements identity.Store.
func (s *Store) UpdateTenantSettings(ctx context.Context, id string, st identity.Settings) error {
	defer s.lock()()
	return update(s.tenants, id, nil, "tenant not found", func(t *identity.Tenant) error {
		t.Settings = st
		*t = cloneTenant(*t)
		return nil
	})
}

// CreateUser implements identity.Store.
func (s *Store) CreateUser(ctx context.Context, u identity.User) error {
	defer s.lock()()
	return s.withClaims(ctx, func() error {
		clash := func(o identity.User) bool {
			return o.TenantID == u.TenantID && (filter.Fold(o.Name) == filter.Fold(u.Name) || (u.ExternalID != "" && o.ExternalID == u.ExternalID))
		}
		return insertUnique(s.users, u.ID, cloneUser(u), "user exists", clash, "user name or externalId exists")
	})
}

// GetUserByExternalID implements identity.Store.
func (s *Store) GetUserByExternalID(ctx context.Context, tenantID, externalID string) (identity.User, error) {
	defer s.lock()()
	match := func(u identity.User) bool {
		return u.TenantID == tenantID && externalID != "" && u.ExternalID == externalID
	}
	return find(s.users, match, cloneUser, "user not found")
}

// ListUsers implements identity.Store.
func (s *Store) ListUsers(ctx context.Context, tenantID string, q identity.ListQuery) ([]identity.User, int, error) {
	defer s.lock()()
	listed := func(u identity.User) bool { return u.TenantID == tenantID && (q.Name == "" || u.Name == q.Name) }
	all := appendMatching(nil, s.users, listed, cloneUser)
	slices.SortFunc(all, func(a, b identity.User) int { return strings.Compare(a.Name, b.Name) })
	return page(all, q.Skip, q.Limit)
}

// CountPasswordSchemes implements identity.Store.
func (s *Store) CountPasswordSchemes(ctx context.Context, tenantID string) (map[string]int, error) {
	defer s.lock()()
	out := map[string]int{}
	for _, u := range s.users {
		if u.TenantID == tenantID {
			out[u.PasswordScheme]++
		}
	}
	return out, nil
}

// ListTenants implements identity.Store.
func (s *Store) ListTenants(ctx context.Context, q identity.ListQuery) ([]identity.Tenant, int, error) {
	defer s.lock()()
	listed := func(t identity.Tenant) bool {
		return (q.Name == "" || t.Name == q.Name) && (q.Code == "" || t.Code == q.Code)
	}
	all := appendMatching(nil, s.tenants, listed, cloneTenant)
	sortByTimeID(all, func(t identity.Tenant) (time.Time, string) { return t.CreatedAt, t.ID })
	return page(all, q.Skip, q.Limit)
}

// GetUser implements identity.Store.
func (s *Store) GetUser(ctx context.Context, tenantID string, id identity.ObjectID) (identity.User, error) {
	defer s.lock()()
	ofTenant := func(u identity.User) bool { return u.TenantID == tenantID }
	return get(s.users, id, ofTenant, cloneUser, "user not found")
}

// GetUserByName implements identity.Store.
func (s *Store) GetUserByName(ctx context.Context, tenantID, name string) (identity.User, error) {
	defer s.lock()()
	named := func(u identity.User) bool { return u.TenantID == tenantID && u.Name == name }
	return find(s.users, named, cloneUser, "user not found")
}

// CreateOAuthClient implements identity.Store.
func (s *Store) CreateOAuthClient(ctx context.Context, c identity.OAuthClient) error {
	defer s.lock()()
	if c.Type == "" {
		c.Type = identity.ClientConfidential // as the SQL stores' column default
	}
	for _, l := range []*[]string{&c.RedirectURIs, &c.PostLogoutRedirectURIs, &c.GrantTypes} {
		if len(*l) == 0 {
			*l = nil
		}
	}
	return s.withClaims(ctx, func() error {
		return insert(s.oauthClients, c.ID, cloneOAuthClient(c), "client exists")
	})
}

// GetOAuthClient implements identity.Store.
func (s *Store) GetOAuthClient(ctx context.Context, id string) (identity.OAuthClient, error) {
	defer s.lock()()
	return get(s.oauthClients, id, nil, cloneOAuthClient, "client not found")
}

// ListOAuthClients implements identity.Store.
func (s *Store) ListOAuthClients(ctx context.Context, tenantID string, q identity.ListQuery) ([]identity.OAuthClient, int, error) {
	defer s.lock()()
	listed := func(c identity.OAuthClient) bool { return c.TenantID == tenantID && (q.Name == "" || c.Name == q.Name) }
	all := appendMatching(nil, s.oauthClients, listed, cloneOAuthClient)
	sortByTimeID(all, func(c identity.OAuthClient) (time.Time, string) { return c.CreatedAt, c.ID })
	return page(all, q.Skip, q.Limit)
}

// DeleteOAuthClient implements identity.Store.
func (s *Store) DeleteOAuthClient(ctx context.Context, tenantID, id string) error {
	defer s.lock()()
	ofTenant := func(c identity.OAuthClient) bool { return c.TenantID == tenantID }
	return remove(s.oauthClients, id, ofTenant, "client not found")
}

// CreateAPIKey implements identity.Store.
func (s *Store) CreateAPIKey(ctx context.Context, k identity.APIKey) error {
	defer s.lock()()
	return s.withClaims(ctx, func() error {
		sameID := func(o identity.APIKey) bool { return o.ID == k.ID }
		return insertUnique(s.apiKeys, hex.EncodeToString(k.Hash), cloneKey(k), "api key exists", sameID, "api key exists")
	})
}

// GetAPIKeyByHash implements identity.Store.
func (s *Store) GetAPIKeyByHash(ctx context.Context, hash []byte) (identity.APIKey, error) {
	defer s.lock()()
	return get(s.apiKeys, hex.EncodeToString(hash), nil, cloneKey, "api key not found")
}

// CreateSigningKey implements identity.Store.
func (s *Store) CreateSigningKey(ctx context.Context, k identity.SigningKey) error {
	defer s.lock()()
	if slices.ContainsFunc(s.signingKeys, func(o identity.SigningKey) bool { return o.ID == k.ID }) {
		return fault.E(fault.Conflict, "signing key exists")
	}
	s.signingKeys = append(s.signingKeys, cloneSigningKey(k))
	return nil
}

// ListSigningKeys implements identity.Store.
func (s *Store) ListSigningKeys(ctx context.Context) ([]identity.SigningKey, error) {
	defer s.lock()()
	out := make([]identity.SigningKey, len(s.signingKeys))
	for i, k := range s.signingKeys {
		out[i] = cloneSigningKey(k)
	}
	return out, nil
}

// CreateRefreshToken implements identity.Store.
func (s *Store) CreateRefreshToken(ctx context.Context, t identity.RefreshToken) error {
	defer s.lock()()
	h := hex.EncodeToString(t.Hash)
	t.Hash, t.AMR = slices.Clone(t.Hash), slices.Clone(t.AMR)
	return insert(s.refreshTokens, h, t, "refresh token exists")
}

// UseRefreshToken implements identity.Store. A token is used up even when
// it has expired.
func (s *Store) UseRefreshToken(ctx context.Context, hash []byte, now time.Time) (identity.RefreshToken, error) {
	defer s.lock()()
	t, err := take(s.refreshTokens, hex.EncodeToString(hash), nil, "refresh token not found")
	if err == nil && !now.Before(t.ExpiresAt) {
		return identity.RefreshToken{}, fault.E(fault.NotFound, "refresh token expired")
	}
	return t, err
}

// RevokeSubject implements identity.Store.
func (s *Store) RevokeSubject(ctx context.Context, r identity.Revocation) error {
	defer s.lock()()
	s.revocations = slices.DeleteFunc(s.revocations, func(o identity.Revocation) bool { return o.Until.Before(r.At) })
	same := func(o identity.Revocation) bool {
		return o.TenantID == r.TenantID && o.Subject == r.Subject && o.At.Equal(r.At)
	}
	if !slices.ContainsFunc(s.revocations, same) {
		s.revocations = append(s.revocations, r)
	}
	return nil
}

// ListRevocations implements identity.Store.
func (s *Store) ListRevocations(ctx context.Context, since time.Time) ([]identity.Revocation, error) {
	defer s.lock()()
	var out []identity.Revocation
	for _, r := range s.revocations {
		if r.At.After(since) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b identity.Revocation) int {
		return cmp.Or(a.At.Compare(b.At), strings.Compare(a.TenantID, b.TenantID), strings.Compare(a.Subject, b.Subject))
	})
	return out, nil
}
