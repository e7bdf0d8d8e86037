package sqlstore

import (
	"context"
	"time"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity/clients"
)

var _ clients.Store = (*Store)(nil)

// CreateClientCA implements clients.Store. The table holds at most one row
// (id = 1), so of processes creating the CA at once, the first insert to
// commit wins and the others get a unique violation: Conflict, after which
// clients.EnsureCA reloads the stored CA.
func (s *Store) CreateClientCA(ctx context.Context, ca clients.CA) error {
	return s.exec(ctx, `INSERT INTO client_ca (id, cert_pem, sealed_key, created_at) VALUES (1, $1, $2, $3)`, ca.CertPEM, ca.SealedKey, ca.CreatedAt)
}

// GetClientCA implements clients.Store.
func (s *Store) GetClientCA(ctx context.Context) (clients.CA, error) {
	var ca clients.CA
	err := s.c.Read().QueryRow(ctx, `SELECT cert_pem, sealed_key, created_at FROM client_ca WHERE id = 1`).Scan(&ca.CertPEM, &ca.SealedKey, &ca.CreatedAt)
	if err != nil {
		return clients.CA{}, s.notFound(err, "client CA")
	}
	return ca, nil
}

const profileCols = `id, tenant_id, name, subject_field, cert_lifetime_days, role, created_at`

// CreateProfile implements clients.Store.
func (s *Store) CreateProfile(ctx context.Context, p clients.Profile) error {
	return s.exec(ctx, `INSERT INTO client_profiles (`+profileCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		p.ID, p.TenantID, p.Name, p.SubjectField, p.CertLifetimeDays, p.Role, p.CreatedAt)
}

func (s *Store) scanProfile(row Row) (clients.Profile, error) {
	var p clients.Profile
	if err := row.Scan(&p.ID, &p.TenantID, &p.Name, &p.SubjectField, &p.CertLifetimeDays, &p.Role, &p.CreatedAt); err != nil {
		return clients.Profile{}, s.notFound(err, "profile")
	}
	return p, nil
}

// GetProfile implements clients.Store.
func (s *Store) GetProfile(ctx context.Context, tenantID, id string) (clients.Profile, error) {
	return s.scanProfile(s.c.Read().QueryRow(ctx, `SELECT `+profileCols+` FROM client_profiles WHERE tenant_id = $1 AND id = $2`, tenantID, id))
}

// GetProfileByName implements clients.Store.
func (s *Store) GetProfileByName(ctx context.Context, tenantID, name string) (clients.Profile, error) {
	return s.scanProfile(s.c.Read().QueryRow(ctx, `SELECT `+profileCols+` FROM client_profiles WHERE tenant_id = $1 AND name = $2`, tenantID, name))
}

const regTokenCols = `id, tenant_id, profile_id, hash, max_clients, used, expires_at, created_at`

// CreateRegistrationToken implements clients.Store.
func (s *Store) CreateRegistrationToken(ctx context.Context, t clients.RegistrationToken) error {
	return s.exec(ctx, `INSERT INTO registration_tokens (`+regTokenCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		t.ID, t.TenantID, t.ProfileID, t.Hash, t.MaxClients, t.Used, t.ExpiresAt, t.CreatedAt)
}

func (s *Store) scanRegToken(row Row) (clients.RegistrationToken, error) {
	var t clients.RegistrationToken
	if err := row.Scan(&t.ID, &t.TenantID, &t.ProfileID, &t.Hash, &t.MaxClients, &t.Used, &t.ExpiresAt, &t.CreatedAt); err != nil {
		return clients.RegistrationToken{}, s.notFound(err, "registration token")
	}
	return t, nil
}

// GetRegistrationTokenByHash implements clients.Store.
func (s *Store) GetRegistrationTokenByHash(ctx context.Context, hash []byte) (clients.RegistrationToken, error) {
	return s.scanRegToken(s.c.Read().QueryRow(ctx, `SELECT `+regTokenCols+` FROM registration_tokens WHERE hash = $1`, hash))
}

// UseRegistrationToken implements clients.Store. The check and the
// increment are one conditional UPDATE, so no more than MaxClients
// concurrent callers succeed. When it matches nothing, a plain read (the
// refused call changed nothing) says why.
func (s *Store) UseRegistrationToken(ctx context.Context, hash []byte, now time.Time) (clients.RegistrationToken, error) {
	t, err := s.scanRegToken(s.c.Write().QueryRow(ctx, `UPDATE registration_tokens SET used = used + 1
		WHERE hash = $1 AND used < max_clients AND expires_at > $2 RETURNING `+regTokenCols, hash, now))
	if !fault.Is(fault.NotFound, err) {
		return t, err
	}
	cur, err := s.GetRegistrationTokenByHash(ctx, hash)
	switch {
	case err != nil:
		return clients.RegistrationToken{}, err
	case !now.Before(cur.ExpiresAt):
		return clients.RegistrationToken{}, fault.E(fault.Expired, "registration token expired")
	default:
		return clients.RegistrationToken{}, fault.E(fault.Conflict, "registration token used up")
	}
}

const clientCols = `id, tenant_id, name, profile_id, registration_token_id, role, subject_dn, certificate_pem, fingerprint, serial, not_before, not_after, created_at`

// CreateClient implements clients.Store.
func (s *Store) CreateClient(ctx context.Context, c clients.Client) error {
	return s.exec(ctx, `INSERT INTO registered_clients (`+clientCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
		c.ID, c.TenantID, c.Name, c.ProfileID, c.RegistrationTokenID, c.Role, c.SubjectDN, c.CertificatePEM, c.Fingerprint, c.Serial,
		c.NotBefore, c.NotAfter, c.CreatedAt)
}

func (s *Store) scanClient(row Row) (clients.Client, error) {
	var c clients.Client
	if err := row.Scan(&c.ID, &c.TenantID, &c.Name, &c.ProfileID, &c.RegistrationTokenID, &c.Role, &c.SubjectDN, &c.CertificatePEM,
		&c.Fingerprint, &c.Serial, &c.NotBefore, &c.NotAfter, &c.CreatedAt); err != nil {
		return clients.Client{}, s.notFound(err, "client")
	}
	return c, nil
}

// GetClient implements clients.Store.
func (s *Store) GetClient(ctx context.Context, tenantID, id string) (clients.Client, error) {
	return s.scanClient(s.c.Read().QueryRow(ctx, `SELECT `+clientCols+` FROM registered_clients WHERE tenant_id = $1 AND id = $2`, tenantID, id))
}

// LookupClient implements clients.Store.
func (s *Store) LookupClient(ctx context.Context, id string) (clients.Client, error) {
	return s.scanClient(s.c.Read().QueryRow(ctx, `SELECT `+clientCols+` FROM registered_clients WHERE id = $1`, id))
}

// ListClients implements clients.Store.
func (s *Store) ListClients(ctx context.Context, tenantID string) ([]clients.Client, error) {
	return nonNil(list(ctx, s, s.c.Read(), s.scanClient, `SELECT `+clientCols+` FROM registered_clients WHERE tenant_id = $1 ORDER BY created_at, id`, tenantID))
}

// DeleteClient implements clients.Store.
func (s *Store) DeleteClient(ctx context.Context, tenantID, id string) error {
	n, err := s.c.Write().Exec(ctx, `DELETE FROM registered_clients WHERE tenant_id = $1 AND id = $2`, tenantID, id)
	return s.affected(n, err, "client")
}
