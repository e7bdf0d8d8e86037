package sqlstore

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/filter"
	"github.com/latchkey/latchkey/identity"
)

var _ identity.Store = (*Store)(nil)

// CreateTenant implements identity.Store.
func (s *Store) CreateTenant(ctx context.Context, t identity.Tenant) error {
	return s.exec(ctx, `INSERT INTO tenants (id, code, name, settings, created_at) VALUES ($1, $2, $3, $4, $5)`,
		t.ID, t.Code, t.Name, jsonText(t.Settings), t.CreatedAt)
}

const tenantCols = `id, code, name, settings, created_at`

func (s *Store) scanTenant(row Row) (identity.Tenant, error) {
	var (
		t        identity.Tenant
		settings []byte
	)
	if err := row.Scan(&t.ID, &t.Code, &t.Name, &settings, &t.CreatedAt); err != nil {
		return identity.Tenant{}, s.notFound(err, "tenant")
	}
	return t, unmarshal(settings, &t.Settings)
}

// GetTenant implements identity.Store.
func (s *Store) GetTenant(ctx context.Context, id string) (identity.Tenant, error) {
	return s.scanTenant(s.c.Read().QueryRow(ctx, `SELECT `+tenantCols+` FROM tenants WHERE id = $1`, id))
}

// GetTenantByCode implements identity.Store.
func (s *Store) GetTenantByCode(ctx context.Context, code string) (identity.Tenant, error) {
	return s.scanTenant(s.c.Read().QueryRow(ctx, `SELECT `+tenantCols+` FROM tenants WHERE code = $1`, code))
}

// UpdateTenantSettings implements identity.Store.
func (s *Store) UpdateTenantSettings(ctx context.Context, id string, st identity.Settings) error {
	n, err := s.c.Write().Exec(ctx, `UPDATE tenants SET settings = $1 WHERE id = $2`, jsonText(st), id)
	return s.affected(n, err, "tenant")
}

// CreateUser implements identity.Store.
func (s *Store) CreateUser(ctx context.Context, u identity.User) error {
	// A name that folds to one in use is refused (issue 38's rule for
	// names created from now on); one statement, so no other writer
	// slips in between on SQLite.
	n, err := s.c.Write().Exec(ctx, `INSERT INTO users (`+userCols+`, name_key) SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18
		WHERE NOT EXISTS (SELECT 1 FROM users WHERE tenant_id = $2 AND name_key = $18)`, append(userArgs(u), filter.Fold(u.Name))...)
	if err != nil {
		return s.c.MapErr(err)
	}
	if n == 0 {
		return fault.E(fault.Conflict, "a user whose name differs only by case exists in the tenant")
	}
	return nil
}

const userCols = `id, tenant_id, name, password_hash, roles, created_at,
	password_scheme, email, email_verified, display_name, given_name, family_name, external_id, active,
	profile, version, updated_at`

// userArgs are u's values in userCols' order. An empty ExternalID is SQL
// NULL, so that the unique index holds only the users that have one.
func userArgs(u identity.User) []any {
	var ext *string
	if u.ExternalID != "" {
		ext = &u.ExternalID
	}
	profile := "{}"
	if len(u.Profile) > 0 {
		profile = string(u.Profile)
	}
	return []any{u.ID[:], u.TenantID, u.Name, u.PasswordHash, jsonText(u.Roles), u.CreatedAt,
		u.PasswordScheme, u.Email, u.EmailVerified, u.DisplayName, u.GivenName, u.FamilyName, ext, !u.Inactive,
		profile, u.Version, optTime(u.UpdatedAt)}
}

func (s *Store) scanUser(row Row) (identity.User, error) {
	u, err := scanUserRow(row)
	if err != nil {
		return identity.User{}, s.notFound(err, "user")
	}
	return u, nil
}

func scanUserRow(row Row) (identity.User, error) {
	var (
		u         identity.User
		id, roles []byte
		ext       *string
		active    bool
		profile   []byte
		updated   *time.Time
	)
	if err := row.Scan(&id, &u.TenantID, &u.Name, &u.PasswordHash, &roles, &u.CreatedAt,
		&u.PasswordScheme, &u.Email, &u.EmailVerified, &u.DisplayName, &u.GivenName, &u.FamilyName, &ext, &active,
		&profile, &u.Version, &updated); err != nil {
		return identity.User{}, err
	}
	if len(profile) > 0 && string(profile) != "{}" {
		u.Profile = profile
	}
	u.UpdatedAt = orZero(updated)
	copy(u.ID[:], id)
	if ext != nil {
		u.ExternalID = *ext
	}
	u.Inactive = !active
	return u, unmarshal(roles, &u.Roles)
}

// GetUser implements identity.Store.
func (s *Store) GetUser(ctx context.Context, tenantID string, id identity.ObjectID) (identity.User, error) {
	return s.scanUser(s.c.Read().QueryRow(ctx, `SELECT `+userCols+` FROM users WHERE id = $1 AND tenant_id = $2`, id[:], tenantID))
}

// GetUserByName implements identity.Store.
func (s *Store) GetUserByName(ctx context.Context, tenantID, name string) (identity.User, error) {
	return s.scanUser(s.c.Read().QueryRow(ctx, `SELECT `+userCols+` FROM users WHERE tenant_id = $1 AND name = $2`, tenantID, name))
}

// GetUserByExternalID implements identity.Store.
func (s *Store) GetUserByExternalID(ctx context.Context, tenantID, externalID string) (identity.User, error) {
	return s.scanUser(s.c.Read().QueryRow(ctx, `SELECT `+userCols+` FROM users WHERE tenant_id = $1 AND external_id = $2`, tenantID, externalID))
}

// ListUsers implements identity.Store: in name order, along the
// (tenant_id, name) unique index.
func (s *Store) ListUsers(ctx context.Context, tenantID string, q identity.ListQuery) ([]identity.User, int, error) {
	filter, args := `tenant_id = $1`, []any{tenantID}
	if q.Name != "" {
		filter += ` AND name = $2`
		args = append(args, q.Name)
	}
	n := len(args)
	return countedPage(ctx, s, scanUserRow, `SELECT count(*) FROM users WHERE `+filter, args,
		`SELECT `+userCols+` FROM users WHERE `+filter+` ORDER BY name LIMIT $`+strconv.Itoa(n+1)+` OFFSET $`+strconv.Itoa(n+2),
		append(args, q.Limit, q.Skip)...)
}

// CountPasswordSchemes implements identity.Store along the
// (tenant_id, password_scheme) index.
func (s *Store) CountPasswordSchemes(ctx context.Context, tenantID string) (map[string]int, error) {
	type count struct {
		scheme string
		n      int
	}
	rows, err := list(ctx, s, s.c.Read(), func(row Row) (c count, err error) {
		err = row.Scan(&c.scheme, &c.n)
		return c, err
	}, `SELECT password_scheme, count(*) FROM users WHERE tenant_id = $1 GROUP BY password_scheme`, tenantID)
	if err != nil {
		return nil, err
	}
	out := make(map[string]int, len(rows))
	for _, c := range rows {
		out[c.scheme] = c.n
	}
	return out, nil
}

// ListTenants implements identity.Store.
func (s *Store) ListTenants(ctx context.Context, q identity.ListQuery) ([]identity.Tenant, int, error) {
	var (
		conds []string
		args  []any
	)
	if q.Name != "" {
		args = append(args, q.Name)
		conds = append(conds, `name = $`+strconv.Itoa(len(args)))
	}
	if q.Code != "" {
		args = append(args, q.Code)
		conds = append(conds, `code = $`+strconv.Itoa(len(args)))
	}
	where := ""
	if len(conds) > 0 {
		where = ` WHERE ` + strings.Join(conds, ` AND `)
	}
	n := len(args)
	scan := func(row Row) (identity.Tenant, error) {
		var (
			t        identity.Tenant
			settings []byte
		)
		if err := row.Scan(&t.ID, &t.Code, &t.Name, &settings, &t.CreatedAt); err != nil {
			return t, err
		}
		return t, unmarshal(settings, &t.Settings)
	}
	return countedPage(ctx, s, scan, `SELECT count(*) FROM tenants`+where, args,
		`SELECT `+tenantCols+` FROM tenants`+where+` ORDER BY created_at, id LIMIT $`+strconv.Itoa(n+1)+` OFFSET $`+strconv.Itoa(n+2),
		append(args, q.Limit, q.Skip)...)
}

// CreateOAuthClient implements identity.Store.
func (s *Store) CreateOAuthClient(ctx context.Context, c identity.OAuthClient) error {
	typ := c.Type
	if typ == "" {
		typ = identity.ClientConfidential
	}
	return s.exec(ctx, `INSERT INTO oauth_clients (id, tenant_id, name, secret_hash, scopes, role, resources, created_at,
		client_type, redirect_uris, post_logout_redirect_uris, grant_types, id_token_alg, metadata) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
		c.ID, c.TenantID, c.Name, append([]byte{}, c.SecretHash...), jsonText(c.Scopes), c.Role, jsonText(append([]string{}, c.Resources...)), c.CreatedAt,
		typ, append([]string{}, c.RedirectURIs...), append([]string{}, c.PostLogoutRedirectURIs...), append([]string{}, c.GrantTypes...), c.IDTokenAlg,
		jsonText(c.ClientMetadata))
}

const oauthClientCols = `id, tenant_id, name, secret_hash, scopes, role, resources, created_at,
	client_type, redirect_uris, post_logout_redirect_uris, grant_types, id_token_alg, metadata`

func scanOAuthClient(row Row) (identity.OAuthClient, error) {
	var (
		c                 identity.OAuthClient
		scopes, resources []byte
		metadata          string
	)
	if err := row.Scan(&c.ID, &c.TenantID, &c.Name, &c.SecretHash, &scopes, &c.Role, &resources, &c.CreatedAt,
		&c.Type, &c.RedirectURIs, &c.PostLogoutRedirectURIs, &c.GrantTypes, &c.IDTokenAlg, &metadata); err != nil {
		return identity.OAuthClient{}, err
	}
	if len(c.SecretHash) == 0 {
		c.SecretHash = nil // a public client's, read as it was written
	}
	// Lists read as they were written: nil when empty.
	for _, l := range []*[]string{&c.RedirectURIs, &c.PostLogoutRedirectURIs, &c.GrantTypes} {
		if len(*l) == 0 {
			*l = nil
		}
	}
	if err := unmarshal(resources, &c.Resources); err != nil {
		return identity.OAuthClient{}, err
	}
	if len(c.Resources) == 0 {
		c.Resources = nil // a client without resources reads as it was written
	}
	if err := unmarshal([]byte(metadata), &c.ClientMetadata); err != nil {
		return identity.OAuthClient{}, err
	}
	return c, unmarshal(scopes, &c.Scopes)
}

// GetOAuthClient implements identity.Store.
func (s *Store) GetOAuthClient(ctx context.Context, id string) (identity.OAuthClient, error) {
	c, err := scanOAuthClient(s.c.Read().QueryRow(ctx, `SELECT `+oauthClientCols+` FROM oauth_clients WHERE id = $1`, id))
	if err != nil {
		return identity.OAuthClient{}, s.notFound(err, "client")
	}
	return c, nil
}

// ListOAuthClients implements identity.Store.
func (s *Store) ListOAuthClients(ctx context.Context, tenantID string, q identity.ListQuery) ([]identity.OAuthClient, int, error) {
	filter, args := `tenant_id = $1`, []any{tenantID}
	if q.Name != "" {
		filter += ` AND name = $2`
		args = append(args, q.Name)
	}
	n := len(args)
	return countedPage(ctx, s, scanOAuthClient, `SELECT count(*) FROM oauth_clients WHERE `+filter, args,
		`SELECT `+oauthClientCols+` FROM oauth_clients WHERE `+filter+` ORDER BY created_at, id LIMIT $`+strconv.Itoa(n+1)+` OFFSET $`+strconv.Itoa(n+2),
		append(args, q.Limit, q.Skip)...)
}

// DeleteOAuthClient implements identity.Store.
func (s *Store) DeleteOAuthClient(ctx context.Context, tenantID, id string) error {
	n, err := s.c.Write().Exec(ctx, `DELETE FROM oauth_clients WHERE tenant_id = $1 AND id = $2`, tenantID, id)
	return s.affected(n, err, "client")
}

// CreateAPIKey implements identity.Store.
func (s *Store) CreateAPIKey(ctx context.Context, k identity.APIKey) error {
	var uid []byte // nil: SQL NULL, an unbound key
	if k.UserID != nil {
		uid = k.UserID[:]
	}
	return s.exec(ctx, `INSERT INTO api_keys (id, hash, tenant_id, name, user_id, areas, created_at, revoked_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		k.ID, k.Hash, k.TenantID, k.Name, uid, jsonText(k.Areas), k.CreatedAt, k.RevokedAt)
}

// GetAPIKeyByHash implements identity.Store.
func (s *Store) GetAPIKeyByHash(ctx context.Context, hash []byte) (identity.APIKey, error) {
	var (
		k          identity.APIKey
		uid, areas []byte
	)
	err := s.c.Read().QueryRow(ctx, `SELECT id, hash, tenant_id, name, user_id, areas, created_at, revoked_at FROM api_keys WHERE hash = $1`, hash).
		Scan(&k.ID, &k.Hash, &k.TenantID, &k.Name, &uid, &areas, &k.CreatedAt, &k.RevokedAt)
	if err != nil {
		return identity.APIKey{}, s.notFound(err, "api key")
	}
	if len(uid) == len(identity.ObjectID{}) {
		var id identity.ObjectID
		copy(id[:], uid)
		k.UserID = &id
	}
	return k, unmarshal(areas, &k.Areas)
}

// CreateSigningKey implements identity.Store.
func (s *Store) CreateSigningKey(ctx context.Context, k identity.SigningKey) error {
	return s.exec(ctx, `INSERT INTO signing_keys (id, algorithm, private, public, created_at) VALUES ($1, $2, $3, $4, $5)`,
		k.ID, k.Algorithm, k.Private, k.Public, k.CreatedAt)
}

// ListSigningKeys implements identity.Store.
func (s *Store) ListSigningKeys(ctx context.Context) ([]identity.SigningKey, error) {
	return list(ctx, s, s.c.Read(), func(row Row) (identity.SigningKey, error) {
		var k identity.SigningKey
		err := row.Scan(&k.ID, &k.Algorithm, &k.Private, &k.Public, &k.CreatedAt)
		return k, err
	}, `SELECT id, algorithm, private, public, created_at FROM signing_keys ORDER BY created_at, id`)
}

// CreateRefreshToken implements identity.Store.
func (s *Store) CreateRefreshToken(ctx context.Context, t identity.RefreshToken) error {
	return s.exec(ctx, `INSERT INTO refresh_tokens (hash, tenant_id, user_id, expires_at, created_at, acr, amr, auth_time) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		t.Hash, t.TenantID, t.UserID[:], t.ExpiresAt, t.CreatedAt, t.ACR, append([]string{}, t.AMR...), optTime(t.AuthTime))
}

// UseRefreshToken implements identity.Store. One DELETE ... RETURNING
// statement: of concurrent callers (in any process) exactly one gets the
// row. An expired token is deleted too, since it can never be used again.
func (s *Store) UseRefreshToken(ctx context.Context, hash []byte, now time.Time) (identity.RefreshToken, error) {
	var (
		t        identity.RefreshToken
		uid      []byte
		authTime *time.Time
	)
	err := s.c.Write().QueryRow(ctx, `DELETE FROM refresh_tokens WHERE hash = $1 RETURNING hash, tenant_id, user_id, expires_at, created_at, acr, amr, auth_time`, hash).
		Scan(&t.Hash, &t.TenantID, &uid, &t.ExpiresAt, &t.CreatedAt, &t.ACR, &t.AMR, &authTime)
	if err != nil {
		return identity.RefreshToken{}, s.notFound(err, "refresh token")
	}
	copy(t.UserID[:], uid)
	t.AuthTime = orZero(authTime)
	if len(t.AMR) == 0 {
		t.AMR = nil
	}
	if !now.Before(t.ExpiresAt) {
		return identity.RefreshToken{}, fault.E(fault.NotFound, "refresh token expired")
	}
	return t, nil
}

// RevokeSubject implements identity.Store.
func (s *Store) RevokeSubject(ctx context.Context, r identity.Revocation) error {
	if err := s.exec(ctx, `DELETE FROM revocations WHERE until < $1`, r.At); err != nil {
		return err
	}
	return s.exec(ctx, `INSERT INTO revocations (tenant_id, subject, at, until) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`,
		r.TenantID, r.Subject, r.At, r.Until)
}

// ListRevocations implements identity.Store.
func (s *Store) ListRevocations(ctx context.Context, since time.Time) ([]identity.Revocation, error) {
	return list(ctx, s, s.c.Read(), func(row Row) (identity.Revocation, error) {
		var r identity.Revocation
		err := row.Scan(&r.TenantID, &r.Subject, &r.At, &r.Until)
		return r, err
	}, `SELECT tenant_id, subject, at, until FROM revocations WHERE at > $1 ORDER BY at, tenant_id, subject`, since)
}
