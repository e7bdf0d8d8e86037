package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

var _ identity.Store = (*Store)(nil)

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only called with plain structs and string slices
	}
	return string(b)
}

// CreateTenant implements identity.Store.
func (s *Store) CreateTenant(ctx context.Context, t identity.Tenant) error {
	_, err := s.exec(ctx, `INSERT INTO tenants (id, code, name, settings, exchange_key, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
		t.ID, t.Code, t.Name, jsonText(t.Settings), t.ExchangeKey, micros(t.CreatedAt))
	return mapErr(err)
}

const tenantCols = `id, code, name, settings, exchange_key, created_at`

func scanTenant(row *sql.Row) (identity.Tenant, error) {
	var (
		t        identity.Tenant
		settings string
		created  int64
	)
	if err := row.Scan(&t.ID, &t.Code, &t.Name, &settings, &t.ExchangeKey, &created); err != nil {
		return identity.Tenant{}, notFound(err, "tenant")
	}
	if err := json.Unmarshal([]byte(settings), &t.Settings); err != nil {
		return identity.Tenant{}, fault.E(fault.Internal, err)
	}
	t.CreatedAt = fromMicros(created)
	return t, nil
}

// GetTenant implements identity.Store.
func (s *Store) GetTenant(ctx context.Context, id string) (identity.Tenant, error) {
	return scanTenant(s.queryRow(ctx, `SELECT `+tenantCols+` FROM tenants WHERE id = ?`, id))
}

// GetTenantByCode implements identity.Store.
func (s *Store) GetTenantByCode(ctx context.Context, code string) (identity.Tenant, error) {
	return scanTenant(s.queryRow(ctx, `SELECT `+tenantCols+` FROM tenants WHERE code = ?`, code))
}

// UpdateTenantSettings implements identity.Store.
func (s *Store) UpdateTenantSettings(ctx context.Context, id string, st identity.Settings) error {
	res, err := s.exec(ctx, `UPDATE tenants SET settings = ? WHERE id = ?`, jsonText(st), id)
	return affected(res, err, "tenant")
}

func affected(res sql.Result, err error, what string) error {
	if err != nil {
		return mapErr(err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return mapErr(err)
	} else if n == 0 {
		return fault.E(fault.NotFound, what+" not found")
	}
	return nil
}

// CreateUser implements identity.Store.
func (s *Store) CreateUser(ctx context.Context, u identity.User) error {
	_, err := s.exec(ctx, `INSERT INTO users (id, tenant_id, name, password_hash, roles, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
		u.ID[:], u.TenantID, u.Name, u.PasswordHash, jsonText(u.Roles), micros(u.CreatedAt))
	return mapErr(err)
}

func scanUser(row *sql.Row) (identity.User, error) {
	var (
		u       identity.User
		id      []byte
		roles   string
		created int64
	)
	if err := row.Scan(&id, &u.TenantID, &u.Name, &u.PasswordHash, &roles, &created); err != nil {
		return identity.User{}, notFound(err, "user")
	}
	copy(u.ID[:], id)
	if err := json.Unmarshal([]byte(roles), &u.Roles); err != nil {
		return identity.User{}, fault.E(fault.Internal, err)
	}
	u.CreatedAt = fromMicros(created)
	return u, nil
}

const userCols = `id, tenant_id, name, password_hash, roles, created_at`

// GetUser implements identity.Store.
func (s *Store) GetUser(ctx context.Context, tenantID string, id identity.ObjectID) (identity.User, error) {
	return scanUser(s.queryRow(ctx, `SELECT `+userCols+` FROM users WHERE id = ? AND tenant_id = ?`, id[:], tenantID))
}

// GetUserByName implements identity.Store.
func (s *Store) GetUserByName(ctx context.Context, tenantID, name string) (identity.User, error) {
	return scanUser(s.queryRow(ctx, `SELECT `+userCols+` FROM users WHERE tenant_id = ? AND name = ?`, tenantID, name))
}

// CreateOAuthClient implements identity.Store.
func (s *Store) CreateOAuthClient(ctx context.Context, c identity.OAuthClient) error {
	_, err := s.exec(ctx, `INSERT INTO oauth_clients (id, tenant_id, name, secret_hash, scopes, role, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		c.ID, c.TenantID, c.Name, c.SecretHash, jsonText(c.Scopes), c.Role, micros(c.CreatedAt))
	return mapErr(err)
}

// GetOAuthClient implements identity.Store.
func (s *Store) GetOAuthClient(ctx context.Context, id string) (identity.OAuthClient, error) {
	var (
		c       identity.OAuthClient
		scopes  string
		created int64
	)
	err := s.queryRow(ctx, `SELECT id, tenant_id, name, secret_hash, scopes, role, created_at FROM oauth_clients WHERE id = ?`, id).
		Scan(&c.ID, &c.TenantID, &c.Name, &c.SecretHash, &scopes, &c.Role, &created)
	if err != nil {
		return identity.OAuthClient{}, notFound(err, "client")
	}
	if err := json.Unmarshal([]byte(scopes), &c.Scopes); err != nil {
		return identity.OAuthClient{}, fault.E(fault.Internal, err)
	}
	c.CreatedAt = fromMicros(created)
	return c, nil
}

// CreateAPIKey implements identity.Store.
func (s *Store) CreateAPIKey(ctx context.Context, k identity.APIKey) error {
	var uid []byte
	if k.UserID != nil {
		uid = k.UserID[:]
	}
	var revoked *int64
	if k.RevokedAt != nil {
		v := micros(*k.RevokedAt)
		revoked = &v
	}
	_, err := s.exec(ctx, `INSERT INTO api_keys (id, hash, tenant_id, name, user_id, areas, created_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		k.ID, k.Hash, k.TenantID, k.Name, uid, jsonText(k.Areas), micros(k.CreatedAt), revoked)
	return mapErr(err)
}

// GetAPIKeyByHash implements identity.Store.
func (s *Store) GetAPIKeyByHash(ctx context.Context, hash []byte) (identity.APIKey, error) {
	var (
		k       identity.APIKey
		uid     []byte
		areas   string
		created int64
		revoked sql.NullInt64
	)
	err := s.queryRow(ctx, `SELECT id, hash, tenant_id, name, user_id, areas, created_at, revoked_at FROM api_keys WHERE hash = ?`, hash).
		Scan(&k.ID, &k.Hash, &k.TenantID, &k.Name, &uid, &areas, &created, &revoked)
	if err != nil {
		return identity.APIKey{}, notFound(err, "api key")
	}
	if len(uid) == len(identity.ObjectID{}) {
		var id identity.ObjectID
		copy(id[:], uid)
		k.UserID = &id
	}
	if err := json.Unmarshal([]byte(areas), &k.Areas); err != nil {
		return identity.APIKey{}, fault.E(fault.Internal, err)
	}
	k.CreatedAt = fromMicros(created)
	if revoked.Valid {
		t := fromMicros(revoked.Int64)
		k.RevokedAt = &t
	}
	return k, nil
}

// CreateSigningKey implements identity.Store.
func (s *Store) CreateSigningKey(ctx context.Context, k identity.SigningKey) error {
	_, err := s.exec(ctx, `INSERT INTO signing_keys (id, algorithm, private, public, created_at) VALUES (?, ?, ?, ?, ?)`,
		k.ID, k.Algorithm, k.Private, k.Public, micros(k.CreatedAt))
	return mapErr(err)
}

// ListSigningKeys implements identity.Store.
func (s *Store) ListSigningKeys(ctx context.Context) ([]identity.SigningKey, error) {
	rows, err := s.query(ctx, `SELECT id, algorithm, private, public, created_at FROM signing_keys ORDER BY created_at, id`)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	var out []identity.SigningKey
	for rows.Next() {
		var (
			k       identity.SigningKey
			created int64
		)
		if err := rows.Scan(&k.ID, &k.Algorithm, &k.Private, &k.Public, &created); err != nil {
			return nil, mapErr(err)
		}
		k.CreatedAt = fromMicros(created)
		out = append(out, k)
	}
	return out, mapErr(rows.Err())
}

// CreateRefreshToken implements identity.Store.
func (s *Store) CreateRefreshToken(ctx context.Context, t identity.RefreshToken) error {
	_, err := s.exec(ctx, `INSERT INTO refresh_tokens (hash, tenant_id, user_id, expires_at, created_at) VALUES (?, ?, ?, ?, ?)`,
		t.Hash, t.TenantID, t.UserID[:], micros(t.ExpiresAt), micros(t.CreatedAt))
	return mapErr(err)
}

// UseRefreshToken implements identity.Store.
func (s *Store) UseRefreshToken(ctx context.Context, hash []byte, now time.Time) (identity.RefreshToken, error) {
	var (
		t                identity.RefreshToken
		uid              []byte
		expires, created int64
	)
	err := s.w.QueryRowContext(ctx, `DELETE FROM refresh_tokens WHERE hash = ? RETURNING hash, tenant_id, user_id, expires_at, created_at`, hash).
		Scan(&t.Hash, &t.TenantID, &uid, &expires, &created)
	if err != nil {
		return identity.RefreshToken{}, notFound(err, "refresh token")
	}
	copy(t.UserID[:], uid)
	t.ExpiresAt, t.CreatedAt = fromMicros(expires), fromMicros(created)
	if !now.Before(t.ExpiresAt) {
		return identity.RefreshToken{}, fault.E(fault.NotFound, "refresh token expired")
	}
	return t, nil
}

// RevokeSubject implements identity.Store.
func (s *Store) RevokeSubject(ctx context.Context, r identity.Revocation) error {
	if _, err := s.exec(ctx, `DELETE FROM revocations WHERE until < ?`, micros(r.At)); err != nil {
		return mapErr(err)
	}
	_, err := s.exec(ctx, `INSERT INTO revocations (tenant_id, subject, at, until) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`,
		r.TenantID, r.Subject, micros(r.At), micros(r.Until))
	return mapErr(err)
}

// ListRevocations implements identity.Store.
func (s *Store) ListRevocations(ctx context.Context, since time.Time) ([]identity.Revocation, error) {
	rows, err := s.query(ctx, `SELECT tenant_id, subject, at, until FROM revocations WHERE at > ? ORDER BY at, tenant_id, subject`, micros(since))
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	var out []identity.Revocation
	for rows.Next() {
		var (
			r         identity.Revocation
			at, until int64
		)
		if err := rows.Scan(&r.TenantID, &r.Subject, &at, &until); err != nil {
			return nil, mapErr(err)
		}
		r.At, r.Until = fromMicros(at), fromMicros(until)
		out = append(out, r)
	}
	return out, mapErr(rows.Err())
}
