package sqlstore

import (
	"context"
	"strings"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/federation"
	"github.com/latchkey/latchkey/identity"
)

var _ federation.Store = (*Store)(nil)

const providerCols = `tenant_id, id, config, client_secret, created_at, updated_at`

func (s *Store) scanProvider(row Row) (federation.Provider, error) {
	var (
		p   federation.Provider
		cfg string
	)
	if err := row.Scan(&p.TenantID, &p.ID, &cfg, &p.ClientSecret, &p.CreatedAt, &p.UpdatedAt); err != nil {
		return p, s.notFound(err, "identity provider")
	}
	tenant, id, secret, created, updated := p.TenantID, p.ID, p.ClientSecret, p.CreatedAt, p.UpdatedAt
	if err := unmarshal([]byte(cfg), &p); err != nil {
		return federation.Provider{}, err
	}
	p.TenantID, p.ID, p.ClientSecret, p.CreatedAt, p.UpdatedAt = tenant, id, secret, created, updated
	return p, nil
}

// CreateIdentityProvider implements federation.Store; the primary key
// (tenant_id, id) makes a taken id a Conflict.
func (s *Store) CreateIdentityProvider(ctx context.Context, p federation.Provider) error {
	return s.exec(ctx, `INSERT INTO identity_providers (`+providerCols+`) VALUES ($1, $2, $3, $4, $5, $6)`,
		p.TenantID, p.ID, jsonText(p), p.ClientSecret, p.CreatedAt, p.UpdatedAt)
}

// GetIdentityProvider implements federation.Store.
func (s *Store) GetIdentityProvider(ctx context.Context, tenantID, id string) (federation.Provider, error) {
	return s.scanProvider(s.c.Read().QueryRow(ctx, `SELECT `+providerCols+` FROM identity_providers WHERE tenant_id = $1 AND id = $2`, tenantID, id))
}

// ListIdentityProviders implements federation.Store.
func (s *Store) ListIdentityProviders(ctx context.Context, tenantID string) ([]federation.Provider, error) {
	return nonNil(list(ctx, s, s.c.Read(), s.scanProvider, `SELECT `+providerCols+` FROM identity_providers WHERE tenant_id = $1 ORDER BY id`, tenantID))
}

// UpdateIdentityProvider implements federation.Store.
func (s *Store) UpdateIdentityProvider(ctx context.Context, p federation.Provider) error {
	n, err := s.c.Write().Exec(ctx, `UPDATE identity_providers SET config = $1, client_secret = $2, updated_at = $3 WHERE tenant_id = $4 AND id = $5`,
		jsonText(p), p.ClientSecret, p.UpdatedAt, p.TenantID, p.ID)
	return s.affected(n, err, "identity provider")
}

// DeleteIdentityProvider implements federation.Store: the provider and its
// links in one transaction.
func (s *Store) DeleteIdentityProvider(ctx context.Context, tenantID, id string) error {
	return s.deleteWith(ctx, "identity provider", `DELETE FROM identity_providers WHERE tenant_id = $1 AND id = $2`, []any{tenantID, id},
		`DELETE FROM federated_identities WHERE tenant_id = $1 AND provider_id = $2`, tenantID, id)
}

const linkCols = `tenant_id, provider_id, subject, user_id, email, linked_at`

func (s *Store) scanLink(row Row) (federation.Link, error) {
	var (
		l   federation.Link
		uid []byte
	)
	if err := row.Scan(&l.TenantID, &l.ProviderID, &l.Subject, &uid, &l.Email, &l.LinkedAt); err != nil {
		return l, s.notFound(err, "linked identity")
	}
	if len(uid) != len(l.UserID) {
		return federation.Link{}, fault.E(fault.Internal, "stored identity link has a malformed user id")
	}
	copy(l.UserID[:], uid)
	return l, nil
}

// CreateFederatedIdentity implements federation.Store: the primary key and
// the (tenant, user, provider) index make either taken a Conflict.
func (s *Store) CreateFederatedIdentity(ctx context.Context, l federation.Link) error {
	return s.exec(ctx, `INSERT INTO federated_identities (`+linkCols+`) VALUES ($1, $2, $3, $4, $5, $6)`,
		l.TenantID, l.ProviderID, l.Subject, l.UserID[:], l.Email, l.LinkedAt)
}

// GetFederatedIdentity implements federation.Store.
func (s *Store) GetFederatedIdentity(ctx context.Context, tenantID, providerID, subject string) (federation.Link, error) {
	return s.scanLink(s.c.Read().QueryRow(ctx, `SELECT `+linkCols+` FROM federated_identities WHERE tenant_id = $1 AND provider_id = $2 AND subject = $3`,
		tenantID, providerID, subject))
}

// ListFederatedIdentities implements federation.Store.
func (s *Store) ListFederatedIdentities(ctx context.Context, tenantID string, userID identity.ObjectID) ([]federation.Link, error) {
	return nonNil(list(ctx, s, s.c.Read(), s.scanLink, `SELECT `+linkCols+` FROM federated_identities WHERE tenant_id = $1 AND user_id = $2 ORDER BY provider_id`,
		tenantID, userID[:]))
}

// DeleteFederatedIdentity implements federation.Store.
func (s *Store) DeleteFederatedIdentity(ctx context.Context, tenantID string, userID identity.ObjectID, providerID string) error {
	n, err := s.c.Write().Exec(ctx, `DELETE FROM federated_identities WHERE tenant_id = $1 AND user_id = $2 AND provider_id = $3`, tenantID, userID[:], providerID)
	return s.affected(n, err, "linked identity")
}

// FindUsersByEmail implements federation.Store, on the users_by_email index.
func (s *Store) FindUsersByEmail(ctx context.Context, tenantID, email string) ([]identity.ObjectID, error) {
	return nonNil(list(ctx, s, s.c.Read(), func(row Row) (identity.ObjectID, error) {
		var (
			id  identity.ObjectID
			uid []byte
		)
		if err := row.Scan(&uid); err != nil {
			return id, s.c.MapErr(err)
		}
		copy(id[:], uid)
		return id, nil
	}, `SELECT id FROM users WHERE tenant_id = $1 AND lower(email) = $2 ORDER BY id LIMIT 2`, tenantID, strings.ToLower(email)))
}
